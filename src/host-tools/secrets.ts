// Secrets of host tools: how they are named in the environment and in HTTP header templates.
//
// Header values may contain `${secret:NAME}` placeholders; NAME must be one of the tool's declared
// `secrets` (checked at load) and is resolved at call time through the runner's resolver. Exec
// tools receive each declared secret as an environment variable named by secretEnvName().

/** `${secret:NAME}` inside a header value; NAME is anything up to the closing brace. */
export const SECRET_PLACEHOLDER = /\$\{secret:([^}]*)\}/g;

/** Environment name of a secret id (as Runloop names it): upper case, non-alphanumerics turned into `_`. */
export function secretEnvName(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** Secret names used by `${secret:NAME}` placeholders in `text`, in order of appearance. */
export function secretPlaceholders(text: string): string[] {
  return [...text.matchAll(SECRET_PLACEHOLDER)].map((match) => match[1] ?? '');
}

/** Replaces every `${secret:NAME}` in `text` with its value from `values` (all must be present). */
export function fillSecretPlaceholders(text: string, values: ReadonlyMap<string, string>): string {
  return text.replace(SECRET_PLACEHOLDER, (_whole, name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`secret ${JSON.stringify(name)} was not resolved`);
    return value;
  });
}
