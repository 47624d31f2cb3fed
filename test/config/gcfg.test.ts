// gcfg's rules, one row each, as ovnkube reads ovnkube.conf (gopkg.in/gcfg.v1 v1.2.3).
// Each row: a conf, and what each variable reads as (a string, an int, null when unset,
// { blank: true } for a name with no '=', or the error reading it gives), or the error
// the whole conf gives (ovnkube-node would not start). The rows were checked against
// gcfg itself (gcfg.ReadStringInto and FatalOnly into ovnkube's field types).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { gcfgInt, gcfgString, GcfgError, parseGcfg, type Gcfg } from '../../src/config/gcfg.js';

type Read = string | number | null | RegExp | { blank: true };
export type Row = [rule: string, conf: string, expected: Record<string, Read> | RegExp];

const INTS = new Set(['default.mtu', 'default.routable-mtu']);

export const ROWS: Row[] = [
  // Names in any case (set.go fieldFold: strings.EqualFold).
  [
    'section and variable names in any case',
    '[Gateway]\nV4-Masquerade-Subnet="100.98.0.0/16"\n',
    { 'gateway.v4-masquerade-subnet': '100.98.0.0/16' },
  ],
  ['upper-case names, unquoted value', '[GATEWAY]\nNEXT-HOP=172.18.0.1\n', { 'gateway.next-hop': '172.18.0.1' }],
  [
    'KELVIN SIGN folds to k, as Go folds it',
    '[\u212aubernetes]\nservice-cidrs=10.96.0.0/16\n',
    { 'kubernetes.service-cidrs': '10.96.0.0/16' },
  ],
  [
    'the lower-case names of CNO, quoted',
    '[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="10.96.0.0/16,fd00:10:96::/112"\n',
    { 'default.mtu': 1400, 'kubernetes.service-cidrs': '10.96.0.0/16,fd00:10:96::/112' },
  ],
  // Values: quotes, blanks, comments.
  ['quotes dropped', '[gateway]\nmode="local"\n', { 'gateway.mode': 'local' }],
  ['blanks inside quotes kept', '[gateway]\nmode=" local "\n', { 'gateway.mode': ' local ' }],
  ['quotes open and close anywhere in a value', '[gateway]\nmode=a "b c" d\n', { 'gateway.mode': 'a b c d' }],
  [
    'unquoted: ends trimmed, inner blanks kept as they are',
    '[gateway]\nmode =  x\ty  z  \n',
    { 'gateway.mode': 'x\ty  z' },
  ],
  ["';' and '#' inside quotes are the value's", '[gateway]\nmode="a;b#c"\n', { 'gateway.mode': 'a;b#c' }],
  ["';' outside quotes starts a comment", '[gateway]\nmode=lo;cal\n', { 'gateway.mode': 'lo' }],
  ["'#' outside quotes starts a comment", '[gateway]\nmode=local # was shared\n', { 'gateway.mode': 'local' }],
  [
    'comment lines and a comment after a header',
    '; ovnkube.conf\n# rendered by CNO\n[gateway] ; the gateway\n  mode=local\n',
    { 'gateway.mode': 'local' },
  ],
  [
    'CRLF line ends',
    '[gateway]\r\nmode=local\r\nnext-hop="172.18.0.1"\r\n',
    { 'gateway.mode': 'local', 'gateway.next-hop': '172.18.0.1' },
  ],
  ["every '\\r' of a value is dropped, in quotes too", '[gateway]\nmode="lo\rcal"\n', { 'gateway.mode': 'local' }],
  ['blanks around the brackets and the name', ' [ gateway ] \n\tmode\t=\tlocal\n', { 'gateway.mode': 'local' }],
  ['an empty value is the empty string', '[gateway]\nmode=\n', { 'gateway.mode': '' }],
  ['no such variable: null', '[gateway]\n', { 'gateway.mode': null, 'default.mtu': null }],
  // Escapes (scanner.go scanEscape, read.go unquote).
  ['\\" and \\\\ in quotes', '[gateway]\nmode="a\\"b\\\\c"\n', { 'gateway.mode': 'a"b\\c' }],
  ['\\n and \\t in quotes', '[gateway]\nmode="a\\nb\\tc"\n', { 'gateway.mode': 'a\nb\tc' }],
  ['\\" outside quotes', '[gateway]\nmode=a\\"b\n', { 'gateway.mode': 'a"b' }],
  ["a '\\' ending the line continues the value", '[gateway]\nmode=lo\\\ncal\n', { 'gateway.mode': 'local' }],
  ["a '\\' before CRLF continues the value too", '[gateway]\r\nmode=lo\\\r\ncal\r\n', { 'gateway.mode': 'local' }],
  ['an unknown escape in quotes', '[gateway]\nmode="a\\xb"\n', /unknown escape sequence/],
  [
    "'\\' outside quotes before another character",
    '[gateway]\nmode=a\\b\n',
    /unquoted '\\' must be followed by new line or double quote/,
  ],
  ['a quote left open', '[gateway]\nmode="local\n', /string not terminated/],
  ['a quote left open at the end', '[gateway]\nmode="local', /string not terminated/],
  // Repeated variables and sections: the last wins.
  ['a variable repeated: the last wins', '[gateway]\nmode=local\nmode=shared\n', { 'gateway.mode': 'shared' }],
  [
    'a section opened again, in another case',
    '[gateway]\nmode=local\n[default]\nmtu=1400\n[GATEWAY]\nMode=shared\n',
    { 'gateway.mode': 'shared', 'default.mtu': 1400 },
  ],
  // Subsections: not the section's (ovnkube's sections are structs: a warning, ignored).
  ['a subsection is not its section', '[gateway "extra"]\nmode=local\n', { 'gateway.mode': null }],
  [
    'the section after its subsection',
    '[gateway "extra"]\nmode=local\n[gateway]\nmode=shared\n',
    { 'gateway.mode': 'shared' },
  ],
  ['a blank int in a subsection is only a warning', '[default "x"]\nmtu\n', { 'default.mtu': null }],
  ['a subsection name with \\" and \\\\', '[gateway "a\\"b\\\\"]\n', { 'gateway.mode': null }],
  ['an empty subsection name', '[gateway ""]\n', /empty subsection name/],
  ['\\n in a subsection name', '[gateway "a\\nb"]\n', /unknown escape sequence/],
  ['[section.sub] is not a section name', '[default.x]\nmtu=1400\n', /illegal character U\+002E '\.'/],
  // Blank variables (a name with no '=').
  [
    'a blank variable is kept as blank (true for a bool)',
    '[gateway]\ndisable-snat-multiple-gws\n',
    { 'gateway.disable-snat-multiple-gws': { blank: true } },
  ],
  [
    'a blank variable before a comment',
    '[gateway]\ndisable-snat-multiple-gws ; on\n',
    { 'gateway.disable-snat-multiple-gws': { blank: true } },
  ],
  [
    'a blank string is an error',
    '[gateway]\nmode\n',
    { 'gateway.mode': /blank value not supported for type at section "gateway", variable "mode"/ },
  ],
  ['a blank int is an error', '[default]\nmtu\n', { 'default.mtu': /blank value not supported/ }],
  ['an unknown blank variable is no error', '[gateway]\nsomething-new\nmode=local\n', { 'gateway.mode': 'local' }],
  // Ints (types/int.go ParseInt, Dec|Hex for an int).
  ['an int: decimal, signed', '[default]\nmtu=+1400\n', { 'default.mtu': 1400 }],
  ['an int: leading zeros are decimal', '[default]\nmtu=01400\n', { 'default.mtu': 1400 }],
  ['an int: hex after 0x', '[default]\nmtu=0x578\n', { 'default.mtu': 1400 }],
  ["an int: hex with '_' between digits", '[default]\nmtu=0x_5_78\n', { 'default.mtu': 1400 }],
  ['an int: blanks inside the quotes trimmed', '[default]\nmtu=" 1400 "\n', { 'default.mtu': 1400 }],
  ['an int: 0X is not hex', '[default]\nmtu=0X578\n', { 'default.mtu': /failed to parse "0X578" as int/ }],
  ['an int: no exponent', '[default]\nmtu=1e3\n', { 'default.mtu': /failed to parse/ }],
  ['an int: no inner blank', '[default]\nmtu=14 00\n', { 'default.mtu': /failed to parse/ }],
  ['an int: not empty', '[default]\nmtu=\n', { 'default.mtu': /failed to parse/ }],
  ['an int: within int64', '[default]\nmtu=9223372036854775808\n', { 'default.mtu': /failed to parse/ }],
  ['an int: ASCII digits only', '[default]\nmtu=\u0661\u0664\u0660\u0660\n', { 'default.mtu': /failed to parse/ }],
  [
    'an int read once bad is an error, whatever comes after',
    '[default]\nmtu=x\nmtu=1400\n',
    { 'default.mtu': /failed to parse "x"/ },
  ],
  // Syntax errors: ovnkube-node would not start.
  ['a variable before any section', 'mtu=1400\n[default]\n', /line 1 column 1: expected section header/],
  ['a section not closed', '[gateway\nmode=local\n', /expected subsection name or right bracket/],
  ['text after a section header', '[gateway] mode=local\n', /expected EOL, EOF, or comment/],
  ['an empty section name', '[]\n', /expected section name/],
  ["a name and a value without '='", '[gateway]\nmode local\n', /line 2 column 6: expected '='/],
  ["'=' with no name", '[gateway]\n=local\n', /expected section header or variable declaration/],
  ['a name that does not start with a letter', '[gateway]\n_mode=local\n', /illegal character U\+005F '_'/],
  ['a digit first', '[gateway]\n4mode=local\n', /illegal character U\+0034 '4'/],
  ["a name with '[]'", '[default]\nmtu[]=1400\n', /expected '='/],
  ['a quoted string where a name goes', '[gateway]\n"mode"=local\n', /expected section header or variable declaration/],
  ['a form feed where a token starts', '[gateway]\n\fmode=local\n', /illegal character U\+000C/],
  ['a NUL anywhere, a comment included', '[gateway]\n; \0\nmode=local\n', /line 2 column 3: illegal character NUL/],
  [
    'a byte order mark (ReadInto keeps it)',
    '\ufeff[gateway]\nmode=local\n',
    /line 1 column 1: illegal character U\+FEFF/,
  ],
  ['a lone surrogate (bytes no UTF-8 decoder gives)', '[gateway]\nmode=\ud800\n', /illegal UTF-8 encoding/],
  // Names: letters, digits, '-'; unicode letters are letters.
  [
    'digits and dashes after the first letter, unicode letters',
    '[gateway]\nv6-masquerade-subnet=fd69::/125\n[ünï2]\nx-1=y\n',
    { 'gateway.v6-masquerade-subnet': 'fd69::/125', 'ünï2.x-1': 'y' },
  ],
  ['an empty file', '', { 'gateway.mode': null }],
];

/** A variable read as ovnkube's field of its type reads it: an int or a string. */
function read(doc: Gcfg, key: string): string | number | null {
  const [section, name] = key.split('.') as [string, string];
  return INTS.has(key) ? gcfgInt(doc, section, name) : gcfgString(doc, section, name);
}

for (const [rule, conf, expected] of ROWS) {
  test(`gcfg: ${rule}`, () => {
    if (expected instanceof RegExp) {
      assert.throws(
        () => parseGcfg(conf),
        (err: unknown) =>
          err instanceof GcfgError &&
          err.code === 'ERR_GWMODE_GCFG' &&
          expected.test(err.message) &&
          !err.message.includes('\n'),
      );
      return;
    }
    const doc = parseGcfg(conf);
    for (const [key, want] of Object.entries(expected)) {
      if (want instanceof RegExp) {
        assert.throws(
          () => read(doc, key),
          (err: unknown) => err instanceof GcfgError && want.test(err.message),
          key,
        );
      } else if (want !== null && typeof want === 'object') {
        const [section, name] = key.split('.') as [string, string];
        assert.ok(
          doc.variables.some((v) => v.section === section && v.name === name && v.blank && v.value === ''),
          key,
        );
      } else {
        assert.deepEqual(read(doc, key), want, key);
      }
    }
  });
}
