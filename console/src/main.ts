// The console's entry: a hash router that loads each page's module on demand (the editor's
// CodeMirror and the charts' uPlot are fetched only by the pages that need them).

import 'uplot/dist/uPlot.min.css';
import './style.css';
import { h, mount } from './dom.js';
import catalogPage, { prefetchCatalog } from './pages/catalog.js';

/** What a page module exports: render into `root`; the returned function runs when the page is left. */
export type Page = (root: HTMLElement, args: string[]) => (() => void) | void | Promise<(() => void) | void>;

const pages: Record<string, () => Promise<{ default: Page }>> = {
  // The default page ships in main.js (no chunk round trips before its data is asked for).
  catalog: async () => ({ default: catalogPage }),
  tool: () => import('./pages/tool.js'),
  editor: () => import('./pages/editor.js'),
  live: () => import('./pages/live.js'),
  inspect: () => import('./pages/inspect.js'),
  autonomy: () => import('./pages/autonomy.js'),
};

let leave: (() => void) | void = undefined;
let generation = 0;

async function route(): Promise<void> {
  const root = document.getElementById('app') as HTMLElement;
  const [name = 'catalog', ...args] = location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .map((part) => decodeURIComponent(part));
  const load = pages[name] ?? pages['catalog']!;
  const current = ++generation;
  if (typeof leave === 'function') leave();
  leave = undefined;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('[data-nav]'))
    link.classList.toggle('active', link.dataset['nav'] === (pages[name] ? name : 'catalog'));
  try {
    const page = (await load()).default;
    if (current !== generation) return;
    root.replaceChildren();
    leave = await page(root, args);
  } catch (error) {
    mount(root, h('p', { class: 'error' }, `This page failed: ${(error as Error).message}`));
  }
}

// The catalog's data is requested while the rest of the page starts.
if (/^#?\/?(catalog)?$/.test(location.hash)) prefetchCatalog();
window.addEventListener('hashchange', () => void route());
void route();
