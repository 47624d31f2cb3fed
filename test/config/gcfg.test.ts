// ovnkube.conf's syntax, one row each: a conf, and either what the agent reads from it, which
// must be what ovnkube reads with gcfg (gopkg.in/gcfg.v1 v1.2.3; the readings were checked
// against gcfg.ReadStringInto into ovnkube's field types), or the refusal, for every form
// the network operator does not render (gcfg may take it, or ovnkube-node would not start).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { parseOvnkubeConf, type OvnkubeConf } from '../../src/config/ovnkube-conf.js';

type Row = [rule: string, conf: string, expected: Partial<OvnkubeConf> | RegExp];

const ROWS: Row[] = [
  // What the network operator renders (test/helpers/ovnkube-releases.ts renders it whole).
  [
    'the lower-case names of CNO, quoted and not',
    '[default]\nmtu="1400"\n\n[kubernetes]\nservice-cidrs="10.96.0.0/16,fd00:10:96::/112"\nplatform-type="BareMetal"\n[gateway]\nmode=local\nnodeport=true\n',
    { mtu: 1400, serviceCidrs: ['10.96.0.0/16', 'fd00:10:96::/112'], platformType: 'BareMetal', mode: 'local' },
  ],
  // Names in any ASCII case (set.go fieldFold: strings.EqualFold).
  [
    'section and variable names in any case',
    '[Gateway]\nV4-Masquerade-Subnet="100.98.0.0/16"\n',
    { masqueradeSubnets: ['100.98.0.0/16'] },
  ],
  ['upper-case names, unquoted value', '[GATEWAY]\nNEXT-HOP=172.18.0.1\n', { nextHop: ['172.18.0.1'] }],
  // Values: quotes, blanks, comments (scanValString).
  ['blanks inside quotes kept', '[gateway]\nmode=" local "\n', { mode: ' local ' }],
  ['quotes open and close anywhere in a value', '[gateway]\nmode=a "b c" d\n', { mode: 'a b c d' }],
  ['unquoted: ends trimmed, inner blanks kept', '[gateway]\nmode =  x\ty  z  \n', { mode: 'x\ty  z' }],
  ["';' and '#' inside quotes are the value's", '[gateway]\nmode="a;b#c"\n', { mode: 'a;b#c' }],
  ["';' outside quotes starts a comment", '[gateway]\nmode=lo;cal\n', { mode: 'lo' }],
  ["'#' outside quotes starts a comment", '[gateway]\nmode=local # was shared\n', { mode: 'local' }],
  [
    'comment lines and a comment after a header',
    '; ovnkube.conf\n# rendered by CNO\n[gateway] ; the gateway\n  mode=local\n',
    { mode: 'local' },
  ],
  [
    'CRLF line ends',
    '[gateway]\r\nmode=local\r\nnext-hop="172.18.0.1"\r\n',
    { mode: 'local', nextHop: ['172.18.0.1'] },
  ],
  ['blanks around the brackets and the name', ' [ gateway ] \n\tmode\t=\tlocal\n', { mode: 'local' }],
  ['an empty value is no mode', '[gateway]\nmode=\n', { mode: null }],
  ['an empty platform-type is there', '[kubernetes]\nplatform-type=""\n', { platformType: '' }],
  ['no such variable', '[gateway]\n', { mode: null, mtu: null, platformType: null }],
  ['an empty file', '', { mode: null, serviceCidrs: [] }],
  [
    'a section opened again',
    '[gateway]\nmode=local\n[default]\nmtu=1400\n[GATEWAY]\nnext-hop=1.2.3.4\n',
    { mode: 'local', mtu: 1400 },
  ],
  ['another section is not read', '[other]\nmode=local\n', { mode: null }],
  ['an int with leading zeros is decimal', '[default]\nmtu=01400\n', { mtu: 1400 }],
  ['routable-mtu over mtu', '[default]\nmtu=1500\nRoutable-MTU=1400\n', { mtu: 1400 }],
  // Refused, though gcfg reads them: not rendered, so not guessed at.
  ['a subsection', '[gateway "extra"]\nmode=local\n', /^line 1: not a \[section\] header/],
  ['an escape in quotes', '[gateway]\nmode="a\\"b"\n', /^line 2: '\\' \(an escape or a continued line\) is not read$/],
  ["a '\\' ending the line", '[gateway]\nmode=lo\\\ncal\n', /^line 2: '\\'/],
  ['a variable given twice', '[gateway]\nmode=local\nmode=shared\n', /^line 3: \[gateway\] mode given twice$/],
  ['given twice in another case', '[gateway]\nmode=local\n[Gateway]\nMODE=shared\n', /^line 4: .* given twice$/],
  ['a name with no =', '[gateway]\ndisable-snat-multiple-gws\n', /^line 2: not a \[section\] header/],
  ['a non-ASCII letter in a name', '[\u212aubernetes]\nservice-cidrs=10.96.0.0/16\n', /^line 1: /],
  ['an int: signed', '[default]\nmtu=+1400\n', /^\[default\] mtu "\+1400" is not a whole number$/],
  ['an int: hex', '[default]\nmtu=0x578\n', /is not a whole number/],
  ['an int: blanks inside the quotes', '[default]\nmtu=" 1400 "\n', /is not a whole number/],
  ['an int: empty', '[default]\nmtu=\n', /is not a whole number/],
  ['a carriage return inside a line', '[gateway]\nmode="lo\rcal"\n', /^line 2: a NUL, a carriage return/],
  // Refused as gcfg refuses them: ovnkube-node would not start.
  ['a quote left open', '[gateway]\nmode="local\n', /^line 2: a quote is not closed$/],
  ['a variable before any section', 'mtu=1400\n[default]\n', /^line 1: not a \[section\] header/],
  ['a section not closed', '[gateway\nmode=local\n', /^line 1: /],
  ['text after a section header', '[gateway] mode=local\n', /^line 1: /],
  ['an empty section name', '[]\n', /^line 1: /],
  ["a name and a value without '='", '[gateway]\nmode local\n', /^line 2: /],
  ["'=' with no name", '[gateway]\n=local\n', /^line 2: /],
  ['a name that does not start with a letter', '[gateway]\n_mode=local\n', /^line 2: /],
  ['[section.sub]', '[default.x]\nmtu=1400\n', /^line 1: /],
  ['a form feed where a token starts', '[gateway]\n\fmode=local\n', /^line 2: /],
  ['a NUL anywhere, a comment included', '[gateway]\n; \0\nmode=local\n', /^line 2: a NUL/],
  ['a byte order mark', '\ufeff[gateway]\nmode=local\n', /^line 1: a NUL, a carriage return or a byte order mark$/],
];

for (const [rule, conf, expected] of ROWS) {
  test(`ovnkube.conf syntax: ${rule}`, () => {
    if (expected instanceof RegExp) {
      assert.throws(
        () => parseOvnkubeConf(conf),
        (err: unknown) => err instanceof Error && expected.test(err.message) && !err.message.includes('\n'),
      );
      return;
    }
    const read = parseOvnkubeConf(conf);
    for (const [key, want] of Object.entries(expected)) assert.deepEqual(read[key as keyof OvnkubeConf], want, key);
  });
}
