// The subscription's kernel-side filter: a classic BPF program attached to its socket
// (SO_ATTACH_FILTER) that drops, before they are queued, the route notifications that
// cannot be one of the watched prefixes in the watched table.
//
// Why: the kernel runs a socket's filter before it charges a notification to the
// socket's receive buffer (net/netlink/af_netlink.c, do_one_broadcast: sk_filter, then
// netlink_broadcast_deliver). Without it, every route change on the node fills the
// buffer, and a burst of unrelated ones (a routing daemon reloading a full table)
// overflows it: ENOBUFS, and the agent must re-dump the whole table (on 1,000,000
// routes, at least the kernel's own 0.4 s) before it trusts its cache again. With it,
// only changes to the watched prefixes (and every non-route message) take room.
//
// The rules. Each drops only what the native filter and the JavaScript reader would
// ignore, for every message the kernel builds; anything unexpected passes:
//  - Only a datagram holding exactly one RTM_NEWROUTE or RTM_DELROUTE message (its
//    nlmsg_len is the datagram's length), not marked NLM_F_DUMP_INTR, with the whole
//    rtmsg header, may be dropped; everything else passes (links, addresses, nexthops,
//    a datagram of several messages, anything short).
//  - Dropped when rtm_table is not the one the kernel writes for the watched table: the
//    table itself below 256, RT_TABLE_COMPAT above. The readers take the table from
//    RTA_TABLE; this program relies on the kernel writing both alike in every route
//    message it builds (fib_dump_info, rt6_fill_node), and a table above 255 is told
//    apart only by RTA_TABLE, which the native filter reads after this one.
//  - A default route (length 0) passes when its family has a watched default route, and
//    is dropped otherwise.
//  - Otherwise RTA_DST is looked for among the first MAX_ATTRIBUTES attributes (the
//    kernel writes RTA_TABLE, then RTA_DST): every attribute header is bounds-checked
//    against the message before it is read; not found, malformed, or of the wrong size
//    for its family: passes. Dropped when no watched prefix has its family, length and
//    address.
// A classic BPF program that reads past the end of the packet stops and returns 0, which
// for a socket filter means "drop": so no load here reads beyond a checked length.
// Whatever passes is still checked by the native filter and by JavaScript, as before;
// this program only keeps what they would drop out of the receive buffer.
//
// The program is built from the same FilterPrefix list as the native filter, so the two
// cannot disagree on what is watched. Its size: about 130 instructions, and one more per
// IPv4 prefix or eight per IPv6 one (159 for a dual-stack node's two service CIDRs and
// two default routes). The kernel charges it to the socket's option memory
// (net.core.optmem_max: 20 KiB and global on older kernels, 128 KiB and per network
// namespace on newer ones) and refuses one too large with ENOMEM; measured on 6.18, 20 KiB holds about 50
// IPv6 or 2,000 IPv4 prefixes (the IPv6 comparisons' indirect loads cost the most once
// the kernel has translated them), 128 KiB about 390 IPv6 ones. The subscription then
// runs as before, without it, and says so; over 4,096 instructions (some 500 IPv6
// prefixes) none is built.
import { endianness } from 'node:os';
import { AF_INET, AF_INET6, type FilterPrefix } from './codec.js';

// linux/bpf_common.h, linux/filter.h
const BPF_LD = 0x00;
const BPF_LDX = 0x01;
const BPF_ST = 0x02;
const BPF_ALU = 0x04;
const BPF_JMP = 0x05;
const BPF_RET = 0x06;
const BPF_MISC = 0x07;
const BPF_W = 0x00;
const BPF_B = 0x10;
const BPF_IMM = 0x00;
const BPF_ABS = 0x20;
const BPF_IND = 0x40;
const BPF_MEM = 0x60;
const BPF_LEN = 0x80;
const BPF_ADD = 0x00;
const BPF_OR = 0x40;
const BPF_AND = 0x50;
const BPF_LSH = 0x60;
const BPF_JEQ = 0x10;
const BPF_JGT = 0x20;
const BPF_JGE = 0x30;
const BPF_JA = 0x00;
const BPF_JSET = 0x40;
const BPF_K = 0x00;
const BPF_X = 0x08;
const BPF_TXA = 0x80;

// linux/netlink.h, linux/rtnetlink.h
const RTM_NEWROUTE = 24;
const RTM_DELROUTE = 25;
const NLM_F_DUMP_INTR = 0x10;
const RTA_DST = 1;
const NLA_TYPE_MASK = 0x3fff;
const RT_TABLE_COMPAT = 252;
const NLMSG_HDRLEN = 16;
const RTMSG_LEN = 12;

/** How many attributes are walked looking for RTA_DST; the kernel writes it second. */
const MAX_ATTRIBUTES = 3;
/** Instructions of address comparisons between two returns: hits stay within 8-bit reach. */
const CHUNK = 200;
/** linux/bpf_common.h: the most instructions a classic program may have. */
const BPF_MAXINSNS = 4096;
/** The return value that keeps a whole datagram; 0 drops it. */
const KEEP = 0xffffffff;
const DROP = 0;

// Scratch memory cells.
const M_OFF = 0; // the attribute being read
const M_RLEN = 1; // its rta_len
const M_TMP = 2;

type Target = string;
interface Insn {
  code: number;
  k: number;
  jt?: Target;
  jf?: Target;
  ja?: Target;
}

/** A tiny assembler: instructions with labelled jump targets, resolved at the end. */
class Program {
  private readonly insns: (Insn | { label: string })[] = [];
  private count = 0;

  label(name: string): this {
    this.insns.push({ label: name });
    return this;
  }
  op(code: number, k = 0): this {
    return this.push({ code, k });
  }
  jump(code: number, k: number, jt: Target, jf: Target): this {
    return this.push({ code, k, jt, jf });
  }
  /** BPF_JA: its offset is 32 bits, for a target past the reach of jt and jf. */
  jumpAlways(to: Target): this {
    return this.push({ code: BPF_JMP | BPF_JA, k: 0, ja: to });
  }
  private push(insn: Insn): this {
    this.insns.push(insn);
    this.count++;
    return this;
  }
  /** Instructions so far. */
  size(): number {
    return this.count;
  }

  /**
   * The sock_filter array (u16 code, u8 jt, u8 jf, u32 k, host order). Throws on a
   * conditional jump out of 8-bit reach: the layout below keeps every one short, so
   * that is a defect of this file, which the subscription reports and runs without.
   */
  assemble(): Buffer {
    const at = new Map<string, number>();
    const code: Insn[] = [];
    for (const i of this.insns) {
      if ('label' in i) {
        if (at.has(i.label)) throw new Error(`socket filter: label ${i.label} twice`);
        at.set(i.label, code.length);
      } else code.push(i);
    }
    const out = Buffer.alloc(code.length * 8);
    const le = endianness() === 'LE';
    const offset = (from: number, to: Target | undefined): number => {
      if (to === undefined) return 0;
      const target = at.get(to);
      if (target === undefined) throw new Error(`socket filter: no label ${to}`);
      const d = target - from - 1;
      if (d < 0) throw new Error(`socket filter: backward jump to ${to}`);
      return d;
    };
    for (let n = 0; n < code.length; n++) {
      const i = code[n]!;
      const k = i.ja !== undefined ? offset(n, i.ja) : i.k >>> 0;
      let jt = 0;
      let jf = 0;
      if (i.jt !== undefined || i.jf !== undefined) {
        jt = offset(n, i.jt);
        jf = offset(n, i.jf);
        if (jt > 255 || jf > 255) throw new Error(`socket filter: a jump of ${Math.max(jt, jf)} instructions at ${n}`);
      }
      if (le) {
        out.writeUInt16LE(i.code, n * 8);
        out.writeUInt32LE(k, n * 8 + 4);
      } else {
        out.writeUInt16BE(i.code, n * 8);
        out.writeUInt32BE(k, n * 8 + 4);
      }
      out[n * 8 + 2] = jt;
      out[n * 8 + 3] = jf;
    }
    return out;
  }
}

/** Where the low and the high byte of a host-order u16 at `at` are. */
const LE = endianness() === 'LE';
const lowByte = (at: number) => (LE ? at : at + 1);
const highByte = (at: number) => (LE ? at + 1 : at);

/**
 * The classic BPF program for a subscription watching these prefixes in this table (the
 * rules at the top of this file), as the bytes SO_ATTACH_FILTER takes; null when there
 * is no prefix to watch (nothing may be dropped) or the program would be too large.
 *
 * Three parts, each with its own returns, so that every conditional jump is short (8
 * bits): the header, the walk for RTA_DST, the comparison of the address. The kernel's
 * check of scratch memory (check_load_and_stores in net/core/filter.c) follows the code
 * in order and carries what was stored before a return into the code after it; so each
 * part stores the cells it reads before any jump to its returns: the header reads none,
 * the walk stores both of its cells first, and the comparison is reached only from the
 * walk. The message's length is the datagram's (checked first), read with BPF_LEN
 * wherever it is needed.
 */
export function routeSocketFilter(table: number, prefixes: readonly FilterPrefix[]): Buffer | null {
  if (prefixes.length === 0) return null;
  // Grouped once: by family, then by destination length (insertion order kept).
  const groups = new Map<number, Map<number, FilterPrefix[]>>();
  for (const x of prefixes) {
    if (x.length === 0) continue;
    let byLength = groups.get(x.af);
    if (!byLength) groups.set(x.af, (byLength = new Map()));
    byLength.get(x.length)?.push(x) ?? byLength.set(x.length, [x]);
  }
  // Its size, known before it is built (the header and walk about 130, per family 4, per
  // length 5 and a return per CHUNK, per prefix 1 or 8): none past the kernel's limit.
  let estimate = 140;
  for (const [af, byLength] of groups) {
    estimate += 4;
    for (const mine of byLength.values()) estimate += 5 + mine.length * (af === AF_INET ? 1 : 8) * (1 + 1 / CHUNK);
  }
  if (estimate > BPF_MAXINSNS) return null;
  const rtmTable = table < 256 ? table : RT_TABLE_COMPAT;
  const p = new Program();
  const JEQ = BPF_JMP | BPF_JEQ | BPF_K;

  // 1. The header. One route message, whole, alone in the datagram, not DUMP_INTR.
  p.op(BPF_LD | BPF_W | BPF_LEN).jump(BPF_JMP | BPF_JGE | BPF_K, NLMSG_HDRLEN + RTMSG_LEN, 'type', 'keep0');
  p.label('type')
    .op(BPF_LD | BPF_B | BPF_ABS, highByte(4))
    .jump(JEQ, 0, 'typeLow', 'keep0');
  p.label('typeLow')
    .op(BPF_LD | BPF_B | BPF_ABS, lowByte(4))
    .jump(JEQ, RTM_NEWROUTE, 'flags', 'del');
  p.label('del').jump(JEQ, RTM_DELROUTE, 'flags', 'keep0');
  p.label('flags')
    .op(BPF_LD | BPF_B | BPF_ABS, lowByte(6))
    .jump(BPF_JMP | BPF_JSET | BPF_K, NLM_F_DUMP_INTR, 'keep0', 'length');
  // nlmsg_len, a host-order u32, equal to the datagram's length.
  const bytes = LE ? [3, 2, 1, 0] : [0, 1, 2, 3];
  p.label('length').op(BPF_LD | BPF_B | BPF_ABS, bytes[0]!);
  for (const b of bytes.slice(1)) {
    p.op(BPF_ALU | BPF_LSH | BPF_K, 8)
      .op(BPF_ST, M_TMP)
      .op(BPF_LD | BPF_B | BPF_ABS, b);
    p.op(BPF_LDX | BPF_MEM, M_TMP).op(BPF_ALU | BPF_OR | BPF_X);
  }
  p.op(BPF_LDX | BPF_W | BPF_LEN).jump(BPF_JMP | BPF_JEQ | BPF_X, 0, 'table', 'keep0');
  // The table.
  p.label('table')
    .op(BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN + 4)
    .jump(JEQ, rtmTable, 'default', 'drop0');
  // A default route: kept when its family's is watched, else dropped; any other goes on to the walk.
  const defaults = [AF_INET, AF_INET6].filter((af) => prefixes.some((x) => x.af === af && x.length === 0));
  p.label('default').op(BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN + 1);
  p.jump(JEQ, 0, defaults.length > 0 ? 'defaultFamily' : 'drop0', 'walk');
  if (defaults.length > 0) p.label('defaultFamily').op(BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN);
  defaults.forEach((af, i) =>
    p.label(`defaultIs${i}`).jump(JEQ, af, 'keep0', i + 1 < defaults.length ? `defaultIs${i + 1}` : 'drop0'),
  );
  p.label('drop0').op(BPF_RET | BPF_K, DROP);
  p.label('keep0').op(BPF_RET | BPF_K, KEEP);

  // 2. The walk: up to MAX_ATTRIBUTES attributes, for RTA_DST. It only ever keeps.
  p.label('walk')
    .op(BPF_LD | BPF_W | BPF_IMM, NLMSG_HDRLEN + RTMSG_LEN)
    .op(BPF_ST, M_OFF)
    .op(BPF_ST, M_RLEN);
  for (let i = 0; i < MAX_ATTRIBUTES; i++) {
    // Its header inside the message: offset + 4 <= length.
    p.label(`attr${i}`)
      .op(BPF_LDX | BPF_MEM, M_OFF)
      .op(BPF_MISC | BPF_TXA)
      .op(BPF_ALU | BPF_ADD | BPF_K, 4);
    p.op(BPF_LDX | BPF_W | BPF_LEN).jump(BPF_JMP | BPF_JGT | BPF_X, 0, 'keep1', `attr${i}len`);
    // rta_len, at least 4, and all of the attribute inside the message.
    p.label(`attr${i}len`)
      .op(BPF_LDX | BPF_MEM, M_OFF)
      .op(BPF_LD | BPF_B | BPF_IND, highByte(0))
      .op(BPF_ALU | BPF_LSH | BPF_K, 8);
    p.op(BPF_ST, M_TMP)
      .op(BPF_LD | BPF_B | BPF_IND, lowByte(0))
      .op(BPF_LDX | BPF_MEM, M_TMP)
      .op(BPF_ALU | BPF_OR | BPF_X);
    p.op(BPF_ST, M_RLEN).jump(BPF_JMP | BPF_JGE | BPF_K, 4, `attr${i}fits`, 'keep1');
    p.label(`attr${i}fits`)
      .op(BPF_LDX | BPF_MEM, M_OFF)
      .op(BPF_ALU | BPF_ADD | BPF_X);
    p.op(BPF_LDX | BPF_W | BPF_LEN).jump(BPF_JMP | BPF_JGT | BPF_X, 0, 'keep1', `attr${i}type`);
    // rta_type, without the two flag bits, RTA_DST?
    const next = `attr${i}next`;
    p.label(`attr${i}type`)
      .op(BPF_LDX | BPF_MEM, M_OFF)
      .op(BPF_LD | BPF_B | BPF_IND, lowByte(2))
      .jump(JEQ, RTA_DST, `attr${i}high`, next);
    p.label(`attr${i}high`)
      .op(BPF_LD | BPF_B | BPF_IND, highByte(2))
      .op(BPF_ALU | BPF_AND | BPF_K, NLA_TYPE_MASK >> 8)
      .jump(JEQ, 0, 'dst', next);
    // The next one at offset + RTA_ALIGN(rta_len) (X is still the offset).
    p.label(next)
      .op(BPF_LD | BPF_MEM, M_RLEN)
      .op(BPF_ALU | BPF_ADD | BPF_K, 3)
      .op(BPF_ALU | BPF_AND | BPF_K, ~3 >>> 0);
    p.op(BPF_ALU | BPF_ADD | BPF_X).op(BPF_ST, M_OFF);
  }
  p.label('keep1').op(BPF_RET | BPF_K, KEEP);

  // 3. RTA_DST found at M_OFF, of a route whose length is not 0: per family, the size
  // of the address; per destination length watched in that family, the address against
  // each watched prefix of that length, a 32-bit word at a time (BPF reads words in
  // network order, the order the address bytes are in; an IPv4 address is loaded once
  // for all the prefixes of a length). X holds the offset throughout: no load here
  // changes it, and none reads scratch memory after the size check, so returns sit
  // between the comparisons (no jump falls through into them), one after every CHUNK
  // instructions, within reach of the hits before them. Each length ends with a drop:
  // a message has one length. Families and lengths that are not the message's are
  // jumped over with BPF_JA, whose reach is 32 bits.
  p.label('dst').op(BPF_LDX | BPF_MEM, M_OFF);
  const families = [AF_INET, AF_INET6].filter((af) => groups.has(af));
  let keeps = 0;
  let chunkStart = 0;
  const hit = () => `keep${3 + keeps}`;
  const keepAfterChunk = (force: boolean) => {
    if (!force && p.size() - chunkStart < CHUNK) return;
    p.label(hit()).op(BPF_RET | BPF_K, KEEP);
    keeps++;
    chunkStart = p.size();
  };
  families.forEach((af, f) => {
    const words = af === AF_INET ? 1 : 4;
    const nextFamily = f + 1 < families.length ? `family${f + 1}` : 'drop2';
    p.label(`family${f}`)
      .op(BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN)
      .jump(JEQ, af, `family${f}size`, `family${f}other`);
    p.label(`family${f}other`).jumpAlways(nextFamily);
    chunkStart = p.size();
    // An address of another size than the family's: kept, by the first return ahead.
    p.label(`family${f}size`)
      .op(BPF_LD | BPF_MEM, M_RLEN)
      .jump(JEQ, 4 + words * 4, `family${f}g0`, hit());
    const lengths = [...groups.get(af)!.keys()];
    lengths.forEach((length, g) => {
      const group = `family${f}g${g}`;
      const nextGroup = g + 1 < lengths.length ? `family${f}g${g + 1}` : nextFamily;
      p.label(group)
        .op(BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN + 1)
        .jump(JEQ, length, `${group}body`, `${group}other`);
      p.label(`${group}other`).jumpAlways(nextGroup);
      p.label(`${group}body`);
      const mine = groups.get(af)!.get(length)!;
      if (words === 1) p.op(BPF_LD | BPF_W | BPF_IND, 4);
      mine.forEach((prefix, n) => {
        const miss = n + 1 < mine.length ? `${group}p${n + 1}` : `${group}drop`;
        const address = Buffer.alloc(16);
        prefix.bytes.copy(address, 0, 0, Math.min(16, prefix.bytes.length));
        p.label(`${group}p${n}`);
        for (let w = 0; w < words; w++) {
          if (words > 1) p.label(`${group}p${n}w${w}`).op(BPF_LD | BPF_W | BPF_IND, 4 + w * 4);
          p.jump(JEQ, address.readUInt32BE(w * 4), w + 1 < words ? `${group}p${n}w${w + 1}` : hit(), miss);
        }
        keepAfterChunk(n + 1 === mine.length);
      });
      p.label(`${group}drop`).op(BPF_RET | BPF_K, DROP);
    });
  });
  // A family watched only by its default route: its other lengths end here.
  p.label('drop2').op(BPF_RET | BPF_K, DROP);
  const program = p.assemble();
  // The estimate errs high; a program it let through that is still too long is not one.
  return program.length / 8 > BPF_MAXINSNS ? null : program;
}
