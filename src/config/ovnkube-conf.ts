// ovnkube.conf, for what the flags leave out ([kubernetes] service-cidrs, [default] mtu, [gateway]
// next-hop and mode; in 4.8 it always says local) and for what tells 4.10+ (the masquerade subnets,
// [kubernetes] platform-type). ovnkube reads it with gopkg.in/gcfg.v1 v1.2.3 (go-gcfg/gcfg 61b2c08,
// vendored in ovn-kubernetes go-controller/vendor/gopkg.in/gcfg.v1, master 6c366bb) through
// gcfg.ReadInto (go-controller/pkg/config/config.go). This reads the part of gcfg the network
// operator renders (004-config.yaml) as gcfg reads it, and refuses every other line, naming it,
// rather than guess how ovnkube took it (a setting read wrong moves a service route):
//  - `[section]`, `name=value`, blank lines, `;` and `#` comments, LF or CRLF line ends;
//  - a name is a letter, then letters, digits or '-' (scanner.go scanIdentifier), in any ASCII
//    case (set.go fieldFold: strings.EqualFold);
//  - a value runs to the end of the line or to ';'/'#' outside double quotes; quotes may open and
//    close anywhere; blanks outside quotes at either end are dropped, inner ones kept (scanValString);
//  - refused, though gcfg takes them: subsections, '\' (escapes, continued lines), a name with no
//    '=', a variable given twice, non-ASCII names, an int that is not plain digits; refused as gcfg
//    refuses them: a NUL, a byte order mark, bytes that are not UTF-8.
import { readRegularFile } from '../read-regular.js';

export interface OvnkubeConf {
  serviceCidrs: string[];
  mtu: number | null;
  nextHop: string[];
  mode: string | null;
  /** [gateway] v4-masquerade-subnet / v6-masquerade-subnet (4.10+), when set. */
  masqueradeSubnets: string[];
  /** [kubernetes] platform-type, which only CNO 4.10+ renders (possibly ""); null when absent. */
  platformType: string | null;
}

const NAME = '[A-Za-z][A-Za-z0-9-]*';
const HEADER = new RegExp(`^[ \\t]*\\[[ \\t]*(${NAME})[ \\t]*\\][ \\t]*(?:[;#].*)?$`);
const VARIABLE = new RegExp(`^[ \\t]*(${NAME})[ \\t]*=[ \\t]*(.*)$`);

/** A value as gcfg's scanValString and unquote read one without escapes; throws where it has one. */
function value(raw: string): string {
  let out = '';
  let blanks = '';
  let quoted = false;
  for (const c of raw) {
    if (c === '\\') throw new Error(`'\\' (an escape or a continued line) is not read`);
    if (!quoted && (c === ';' || c === '#')) break;
    if (!quoted && (c === ' ' || c === '\t')) {
      blanks += c;
      continue;
    }
    out += blanks;
    blanks = '';
    if (c === '"') quoted = !quoted;
    else out += c;
  }
  if (quoted) throw new Error('a quote is not closed');
  return out;
}

/** Every `section.name` (lower case) and its value; throws `line N: why` at the first line not read. */
function parseVariables(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  let section: string | null = null;
  text.split('\n').forEach((full, i) => {
    const line = full.endsWith('\r') ? full.slice(0, -1) : full;
    try {
      if (/[\0\r\ufeff]/.test(line)) throw new Error('a NUL, a carriage return or a byte order mark');
      const [, header] = HEADER.exec(line) ?? [];
      const [, name, raw = ''] = VARIABLE.exec(line) ?? [];
      if (header) section = header.toLowerCase();
      else if (name && section !== null) {
        const key = `${section}.${name.toLowerCase()}`;
        if (vars.has(key)) throw new Error(`[${section}] ${name} given twice`);
        vars.set(key, value(raw));
      } else if (!/^[ \t]*(?:[;#].*)?$/.test(line))
        throw new Error(`not a [section] header or a name=value in a section, as the network operator renders them`);
    } catch (err) {
      throw new Error(`line ${i + 1}: ${(err as Error).message}`);
    }
  });
  return vars;
}

export const list = (v: string | undefined): string[] => (v ?? '').split(',').flatMap((x) => x.trim() || []);

export function parseOvnkubeConf(text: string): OvnkubeConf {
  const vars = parseVariables(text);
  const int = (section: string, name: string): number | null => {
    const v = vars.get(`${section}.${name}`);
    if (v !== undefined && !/^[0-9]+$/.test(v)) throw new Error(`[${section}] ${name} "${v}" is not a whole number`);
    return v === undefined ? null : Number(v);
  };
  // The cluster MTU: routable-mtu when set, else mtu. Both are read: gcfg fails on either.
  const [routable, plain] = [int('default', 'routable-mtu'), int('default', 'mtu')];
  const mtu = routable ?? plain;
  if (mtu !== null && (mtu < 68 || mtu > 65535))
    throw new Error(`[default] ${routable !== null ? 'routable-mtu' : 'mtu'} ${mtu} is not a valid MTU`);
  return {
    serviceCidrs: list(vars.get('kubernetes.service-cidrs')),
    mtu,
    nextHop: list(vars.get('gateway.next-hop')),
    mode: vars.get('gateway.mode') || null,
    masqueradeSubnets: ['v4', 'v6'].map((v) => vars.get(`gateway.${v}-masquerade-subnet`) ?? '').filter(Boolean),
    platformType: vars.get('kubernetes.platform-type') ?? null,
  };
}

/** Read as src/read-regular.ts reads (a real one is about 1 KiB); not UTF-8 is refused, as gcfg does. */
export async function readOvnkubeConf(file: string): Promise<OvnkubeConf> {
  const bytes = await readRegularFile(file, 256 * 1024);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new Error('illegal UTF-8 encoding');
  }
  return parseOvnkubeConf(text);
}
