// A small DOM helper instead of a view framework: h(tag, attrs, ...children) builds elements.

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown> & { class?: string; on?: Record<string, (event: Event) => void> };

/** Creates an element; `on` attaches listeners, other attributes become properties or attributes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'on')
        for (const [name, fn] of Object.entries(value as Record<string, (e: Event) => void>))
          el.addEventListener(name, fn);
      else if (key === 'class') el.className = String(value);
      else if (key in el && typeof value !== 'string') (el as unknown as Record<string, unknown>)[key] = value;
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else
      el.appendChild(
        typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child,
      );
  }
}

/** Replaces the children of `el`. */
export function mount(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** Milliseconds as text. */
export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return value < 10
    ? `${value.toFixed(1)} ms`
    : value < 10_000
      ? `${Math.round(value)} ms`
      : `${(value / 1000).toFixed(1)} s`;
}

/** A ratio as a percentage. */
export function pct(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : `${(value * 100).toFixed(value < 0.1 && value > 0 ? 1 : 0)}%`;
}

/** Pretty JSON in a <pre>. */
export function json(value: unknown, cls = 'json'): HTMLPreElement {
  return h('pre', { class: cls }, JSON.stringify(value, null, 2) ?? 'undefined');
}

/** A state badge. */
export function badge(text: string, kind = text): HTMLSpanElement {
  return h('span', { class: `badge b-${kind}` }, text);
}

/** A time as HH:MM:SS. */
export function clock(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString([], { hour12: false });
}
