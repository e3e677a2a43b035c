// Shared test data: regular expressions that backtrack catastrophically on RegExp.

/** Patterns that backtrack catastrophically on RegExp, each with an input that triggers it there. */
export const EVIL: ReadonlyArray<readonly [string, string, boolean]> = [
  ['^(.*){16}x$', 'a'.repeat(18), false],
  ['^(a+)+$', 'a'.repeat(40) + '!', false],
  ['(a*)*b', 'a'.repeat(40), false],
  ['^(\\w+\\s?)*$', 'word '.repeat(12) + '!', false],
  ['^([a-z]+\\s?)+$', 'abc '.repeat(12) + '!', false],
  ['(?:x+x+)+y', 'x'.repeat(40), false],
  ['(.*a){20}x', 'a'.repeat(40), false],
  ['^(\\w+,\\w+)*$', 'a,a'.repeat(20) + '!', false],
  ['^(a|a)*$', 'a'.repeat(40) + '!', false],
  ['^(a|aa)+$', 'a'.repeat(60) + '!', false],
  ['^(\\d*)*$', '1'.repeat(40) + 'x', false],
  ['(a?a)+b', 'a'.repeat(40), false],
  ['^(([a-z])+.)+[A-Z]([a-z])+$', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaa!', false],
  [
    '^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$',
    'a'.repeat(40) + '!',
    false,
  ],
  ['^(\\s*a\\s*)*$', ' a '.repeat(20) + '!', false],
  ['^(.*?,){11}P', '1,'.repeat(30), false],
  ['(\\w+\\s?)*$', 'word '.repeat(12) + '!', true],
];
