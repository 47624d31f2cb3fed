// A classic BPF interpreter for the instructions src/dataplane/socket-filter.ts emits,
// with the kernel's semantics where they matter: loads are bounds-checked and one past
// the packet's end stops the program with 0 (drop); word loads read network order;
// jumps are relative to the next instruction. It lets the tests run the program on
// datagrams the kernel never builds (several messages, DUMP_INTR, flagged or shuffled
// attributes); socket-filter.test.ts checks it against the kernel's own verdicts on
// the ones the kernel does build.

import { endianness } from 'node:os';

/** The program's return value for this packet: 0 drops it (the program in host order, as the kernel takes it). */
export function runClassicBpf(program: Buffer, packet: Buffer, le = endianness() === 'LE'): number {
  const n = program.length / 8;
  const mem = new Uint32Array(16);
  let a = 0;
  let x = 0;
  const u16 = (at: number) => (le ? program.readUInt16LE(at) : program.readUInt16BE(at));
  const u32 = (at: number) => (le ? program.readUInt32LE(at) : program.readUInt32BE(at));
  for (let pc = 0, steps = 0; pc < n; pc++, steps++) {
    if (steps > 100_000) throw new Error('cbpf: no end');
    const code = u16(pc * 8);
    const jt = program[pc * 8 + 2]!;
    const jf = program[pc * 8 + 3]!;
    const k = u32(pc * 8 + 4);
    const load = (at: number, size: 1 | 2 | 4): number | undefined => {
      if (at < 0 || at + size > packet.length) return undefined;
      return size === 1 ? packet[at]! : size === 2 ? packet.readUInt16BE(at) : packet.readUInt32BE(at);
    };
    const cls = code & 0x07;
    switch (cls) {
      case 0x00: // BPF_LD
      case 0x01: {
        // BPF_LDX
        const mode = code & 0xe0;
        const size = ({ 0x00: 4, 0x08: 2, 0x10: 1 } as Record<number, 1 | 2 | 4>)[code & 0x18]!;
        let v: number | undefined;
        if (mode === 0x00)
          v = k; // IMM
        else if (mode === 0x80)
          v = packet.length; // LEN
        else if (mode === 0x60)
          v = mem[k]!; // MEM
        else if (mode === 0x20 && cls === 0x00)
          v = load(k, size); // ABS
        else if (mode === 0x40 && cls === 0x00)
          v = load(x + k, size); // IND
        else throw new Error(`cbpf: load 0x${code.toString(16)} not supported`);
        if (v === undefined) return 0;
        if (cls === 0x00) a = v >>> 0;
        else x = v >>> 0;
        break;
      }
      case 0x02: // BPF_ST
        mem[k] = a;
        break;
      case 0x03: // BPF_STX
        mem[k] = x;
        break;
      case 0x04: {
        // BPF_ALU
        const operand = code & 0x08 ? x : k;
        const op = code & 0xf0;
        if (op === 0x00) a = (a + operand) >>> 0;
        else if (op === 0x10) a = (a - operand) >>> 0;
        else if (op === 0x40) a = (a | operand) >>> 0;
        else if (op === 0x50) a = (a & operand) >>> 0;
        else if (op === 0x60) a = (a << operand) >>> 0;
        else if (op === 0x70) a = a >>> operand;
        else throw new Error(`cbpf: alu 0x${code.toString(16)} not supported`);
        break;
      }
      case 0x05: {
        // BPF_JMP
        const op = code & 0xf0;
        if (op === 0x00) {
          pc += k;
          break;
        }
        const operand = code & 0x08 ? x : k;
        const taken =
          op === 0x10
            ? a === operand
            : op === 0x20
              ? a > operand
              : op === 0x30
                ? a >= operand
                : op === 0x40
                  ? (a & operand) !== 0
                  : undefined;
        if (taken === undefined) throw new Error(`cbpf: jump 0x${code.toString(16)} not supported`);
        pc += taken ? jt : jf;
        break;
      }
      case 0x06: // BPF_RET
        return (code & 0x18) === 0x10 ? a : k;
      case 0x07: // BPF_MISC
        if (code === 0x07) x = a;
        else if (code === 0x87) a = x;
        else throw new Error(`cbpf: misc 0x${code.toString(16)} not supported`);
        break;
    }
  }
  throw new Error('cbpf: ran off the end');
}
