// A reader of gcfg, the format of ovnkube.conf, with gcfg's own rules: ovnkube reads its
// config with gopkg.in/gcfg.v1 v1.2.3 (go-gcfg/gcfg 61b2c08; vendored byte for byte in
// ovn-kubernetes go-controller/vendor/gopkg.in/gcfg.v1, master 6c366bb), through
// gcfg.ReadInto and gcfg.FatalOnly (go-controller/pkg/config/config.go). An ini reader
// has other rules, and each difference is a conf ovnkube reads one way and we another:
//  1. Section and variable names match case-insensitively (set.go fieldFold:
//     strings.EqualFold against the `gcfg:"..."` tag): `[Gateway] V4-Masquerade-Subnet`
//     is [gateway] v4-masquerade-subnet. Subsection names are case-sensitive.
//  2. A name is a letter then letters, digits or '-' (scanner.go scanIdentifier); any
//     other character where a token starts is a syntax error, not part of a name.
//  3. A value runs to the end of the line or to ';'/'#' outside double quotes; quotes may
//     open and close anywhere in it; leading and trailing blanks (' ', '\t', '\r') outside
//     quotes are dropped and inner ones kept; every '\r' is dropped (scanValString).
//  4. Escapes: '\\', '\"', '\n', '\t' inside quotes; outside quotes only '\"' and a '\'
//     ending the line (the value goes on on the next line); any other is an error
//     (scanEscape, unquote in read.go). A subsection name takes only '\\' and '\"'.
//  5. A variable repeated: the last one wins (set overwrites a single-valued field).
//  6. A name with no '=' is a "blank" variable: true for a bool, an error for a string or
//     an int; `name=` is the empty string (read.go; set.go stringSetter, intSetter).
//  7. Variables of an unknown section or name, and of a subsection of a section ovnkube
//     keeps as a struct (all of its sections), are warnings ovnkube logs and ignores.
//     Every other error is fatal: ovnkube does not start. A NUL or invalid UTF-8 anywhere
//     is fatal, and so is a byte order mark (ReadInto, unlike ReadFileInto, keeps it).

export class GcfgError extends Error {
  readonly code = 'ERR_GWMODE_GCFG';
  constructor(
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`line ${line} column ${column}: ${reason}`);
  }
}

export interface GcfgVariable {
  /** Folded (see foldName), as every lookup folds its name. */
  readonly section: string;
  /** As written: subsection names are case-sensitive. */
  readonly subsection: string | null;
  readonly name: string;
  /** A name with no '=' (rule 6). */
  readonly blank: boolean;
  /** Unquoted and unescaped; '' when blank. */
  readonly value: string;
  readonly line: number;
}

export interface Gcfg {
  readonly variables: readonly GcfgVariable[];
}

/**
 * A name as gcfg compares it (strings.EqualFold): ASCII letters in either case, and the
 * two non-ASCII letters whose simple case folding is ASCII (KELVIN SIGN, LONG S).
 */
export function foldName(name: string): string {
  return name
    .toLowerCase()
    .replace(/\u212a/g, 'k')
    .replace(/\u017f/g, 's');
}

const EOF = -1;
type Token = 'EOF' | 'EOL' | 'LBRACK' | 'RBRACK' | 'ASSIGN' | 'IDENT' | 'STRING';

const isLetter = (ch: number): boolean =>
  (ch >= 0x61 && ch <= 0x7a) || (ch >= 0x41 && ch <= 0x5a) || (ch >= 0x80 && /^\p{L}$/u.test(String.fromCodePoint(ch)));
const isDigit = (ch: number): boolean =>
  (ch >= 0x30 && ch <= 0x39) || (ch >= 0x80 && /^\p{Nd}$/u.test(String.fromCodePoint(ch)));
const isWhiteSpace = (ch: number): boolean => ch === 0x20 || ch === 0x09 || ch === 0x0d;
const describe = (ch: number): string =>
  `U+${ch.toString(16).toUpperCase().padStart(4, '0')}${ch > 0x20 && ch !== 0x7f ? ` '${String.fromCodePoint(ch)}'` : ''}`;

/** gcfg's scanner (scanner/scanner.go), over code points; it throws at its first error. */
class Scanner {
  private ch = EOF;
  private offset = 0;
  private next = 0;
  private line = 1;
  private lineStart = 0;
  private nextVal = false;
  /** Where the token last returned starts. */
  tokenLine = 1;
  tokenColumn = 1;

  constructor(private readonly src: string) {
    this.advance();
  }

  private advance(): void {
    if (this.ch === 0x0a) {
      this.line++;
      this.lineStart = this.next;
    }
    this.offset = this.next;
    const ch = this.src.codePointAt(this.next);
    if (ch === undefined) {
      this.ch = EOF;
      return;
    }
    this.ch = ch;
    this.next += ch > 0xffff ? 2 : 1;
  }

  fail(reason: string, line = this.tokenLine, column = this.tokenColumn): never {
    throw new GcfgError(line, column, reason);
  }

  private failHere(reason: string): never {
    return this.fail(reason, this.line, this.offset - this.lineStart + 1);
  }

  scan(): { tok: Token; lit: string } {
    for (;;) {
      while (isWhiteSpace(this.ch)) this.advance();
      this.tokenLine = this.line;
      this.tokenColumn = this.offset - this.lineStart + 1;
      const ch = this.ch;
      if (this.nextVal) {
        this.nextVal = false;
        return { tok: 'STRING', lit: this.scanValString() };
      }
      if (isLetter(ch)) {
        const start = this.offset;
        while (isLetter(this.ch) || isDigit(this.ch) || this.ch === 0x2d) this.advance();
        return { tok: 'IDENT', lit: this.src.slice(start, this.offset) };
      }
      const start = this.offset;
      this.advance();
      switch (ch) {
        case EOF:
          return { tok: 'EOF', lit: '' };
        case 0x0a:
          return { tok: 'EOL', lit: '' };
        case 0x22:
          return { tok: 'STRING', lit: this.scanString(start) };
        case 0x5b:
          return { tok: 'LBRACK', lit: '' };
        case 0x5d:
          return { tok: 'RBRACK', lit: '' };
        case 0x3b:
        case 0x23:
          // A comment: skipped up to (not past) the end of the line.
          while (this.ch !== 0x0a && this.ch !== EOF) this.advance();
          continue;
        case 0x3d:
          this.nextVal = true;
          return { tok: 'ASSIGN', lit: '' };
        default:
          return this.fail(`illegal character ${describe(ch)}`);
      }
    }
  }

  private scanEscape(inValue: boolean): void {
    const ch = this.ch;
    this.advance();
    if (ch === 0x5c || ch === 0x22 || (inValue && (ch === 0x6e || ch === 0x74))) return;
    this.failHere('unknown escape sequence');
  }

  /** A quoted subsection name, its quotes included (the opening one already consumed). */
  private scanString(start: number): string {
    while (this.ch !== 0x22) {
      const ch = this.ch;
      this.advance();
      if (ch === 0x0a || ch === EOF) this.fail('string not terminated');
      if (ch === 0x5c) this.scanEscape(false);
    }
    this.advance();
    return this.src.slice(start, this.offset);
  }

  /** A value: raw, its quotes and escapes still in; unquote() reads it. */
  private scanValString(): string {
    const start = this.offset;
    let end = start;
    let inQuote = false;
    while (inQuote || (this.ch !== EOF && this.ch !== 0x0a && this.ch !== 0x3b && this.ch !== 0x23)) {
      const ch = this.ch;
      this.advance();
      if (inQuote && ch === 0x5c) {
        this.scanEscape(true);
      } else if (!inQuote && ch === 0x5c) {
        if (this.ch === 0x0d) this.advance();
        if (this.ch !== 0x0a && this.ch !== 0x22)
          this.fail(`unquoted '\\' must be followed by new line or double quote`);
        this.advance();
      } else if (ch === 0x22) {
        inQuote = !inQuote;
      } else if (ch === EOF || (inQuote && ch === 0x0a)) {
        this.fail('string not terminated');
      }
      if (inQuote || !isWhiteSpace(ch)) end = this.offset;
    }
    return this.src.slice(start, end).replace(/\r/g, '');
  }
}

const UNESCAPE: Record<string, string> = { '\\': '\\', '"': '"', n: '\n', t: '\t' };

/** read.go unquote: the scanner has already refused every escape this does not know. */
function unquote(raw: string): string {
  let out = '';
  let escaped = false;
  for (const c of raw) {
    if (escaped) {
      if (c !== '\n') out += UNESCAPE[c];
      escaped = false;
    } else if (c === '\\') {
      escaped = true;
    } else if (c !== '"') {
      out += c;
    }
  }
  return out;
}

/**
 * Parses gcfg text as ovnkube's gcfg.ReadInto does (read.go readIntoPass), keeping every
 * variable, known or not (rule 7 is the reader of the values': see gcfgString, gcfgInt).
 * Throws a GcfgError where gcfg fails: a conf ovnkube-node would not start with.
 */
export function parseGcfg(text: string): Gcfg {
  const nul = text.indexOf('\0');
  if (nul >= 0) throw at(text, nul, 'illegal character NUL');
  const bad = /\p{Surrogate}/u.exec(text);
  if (bad) throw at(text, bad.index, 'illegal UTF-8 encoding');

  const s = new Scanner(text);
  const variables: GcfgVariable[] = [];
  let section = '';
  let subsection: string | null = null;
  let { tok, lit } = s.scan();
  for (;;) {
    switch (tok) {
      case 'EOF':
        return { variables };
      case 'EOL':
        ({ tok, lit } = s.scan());
        break;
      case 'LBRACK': {
        ({ tok, lit } = s.scan());
        if (tok !== 'IDENT') s.fail('expected section name');
        section = foldName(lit);
        subsection = null;
        ({ tok, lit } = s.scan());
        if (tok === 'STRING') {
          subsection = unquote(lit);
          if (subsection === '') s.fail('empty subsection name');
          ({ tok, lit } = s.scan());
        }
        if (tok !== 'RBRACK')
          s.fail(subsection === null ? 'expected subsection name or right bracket' : 'expected right bracket');
        ({ tok, lit } = s.scan());
        if (tok !== 'EOL' && tok !== 'EOF') s.fail('expected EOL, EOF, or comment');
        break;
      }
      case 'IDENT': {
        if (section === '') s.fail('expected section header');
        const name = foldName(lit);
        const line = s.tokenLine;
        ({ tok, lit } = s.scan());
        const blank = tok === 'EOF' || tok === 'EOL';
        let value = '';
        if (!blank) {
          if (tok !== 'ASSIGN') s.fail(`expected '='`);
          ({ tok, lit } = s.scan());
          value = unquote(lit);
          ({ tok, lit } = s.scan());
          if (tok !== 'EOL' && tok !== 'EOF') s.fail('expected EOL, EOF, or comment');
        }
        variables.push({ section, subsection, name, blank, value, line });
        break;
      }
      case 'ASSIGN':
      case 'RBRACK':
      case 'STRING':
        s.fail(section === '' ? 'expected section header' : 'expected section header or variable declaration');
    }
  }
}

function at(text: string, index: number, reason: string): GcfgError {
  const before = text.slice(0, index);
  const line = before.split('\n').length;
  return new GcfgError(line, index - (before.lastIndexOf('\n') + 1) + 1, reason);
}

/** Every assignment of [section] name (not of its subsections), in file order. */
function assignments(doc: Gcfg, section: string, name: string): GcfgVariable[] {
  const [sect, key] = [foldName(section), foldName(name)];
  return doc.variables.filter((v) => v.section === sect && v.subsection === null && v.name === key);
}

function fatal(v: GcfgVariable, reason: string): never {
  throw new GcfgError(v.line, 1, `${reason} at section "${v.section}", variable "${v.name}"`);
}

/** A string variable as ovnkube's field gets it: the last assignment; blank is fatal (rule 6). */
export function gcfgString(doc: Gcfg, section: string, name: string): string | null {
  const all = assignments(doc, section, name);
  for (const v of all) if (v.blank) fatal(v, 'blank value not supported for type');
  return all.at(-1)?.value ?? null;
}

// Go's unicode.IsSpace, which strings.TrimSpace trims (JS's \s differs: U+FEFF in, U+0085 out).
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const TRIM = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'g');
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };

/**
 * An `int` variable as gcfg sets one (types/int.go ParseInt, mode Dec|Hex): blank is fatal;
 * the trimmed value is decimal with an optional sign, or hex after "0x" or "-0x" (lower-case
 * x; fmt's %v, so '_' between digits); anything else, or out of int64, is fatal.
 */
export function gcfgInt(doc: Gcfg, section: string, name: string): number | null {
  let last: number | null = null;
  for (const v of assignments(doc, section, name)) {
    if (v.blank) fatal(v, 'blank value not supported for type');
    const text = v.value.replace(TRIM, '');
    const [, sign, hex] = /^(-?)0x((?:_?[0-9a-fA-F])+)$/.exec(text) ?? [];
    let n: bigint | null = null;
    if (hex !== undefined) n = BigInt(`0x${hex.replace(/_/g, '')}`) * (sign === '-' ? -1n : 1n);
    else if (/^[+-]?[0-9]+$/.test(text)) n = BigInt(text);
    if (n === null || n < INT64.min || n > INT64.max) fatal(v, `failed to parse ${JSON.stringify(v.value)} as int`);
    last = Number(n);
  }
  return last;
}
