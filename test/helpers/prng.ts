// A seeded random source for fuzz and abuse generators, so that a failure reproduces
// from its seed alone.

export type Rng = () => number;

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const int = (rng: Rng, n: number): number => Math.floor(rng() * n);
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[int(rng, xs.length)]!;
export const bytes = (rng: Rng, n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(rng, 256)));

/** The seed from `variable`, or `fallback`; printed by the caller so a failure names it. */
export function seedFrom(variable: string, fallback: number): number {
  const text = process.env[variable];
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : fallback;
}

/**
 * How many times the short seeded runs of `npm test` a fuzz makes: GWMODE_FUZZ_SCALE,
 * 1 by default; bench/fuzz-long.ts runs them at 50.
 */
export function fuzzCount(base: number): number {
  const scale = Number(process.env.GWMODE_FUZZ_SCALE ?? 1);
  return Number.isFinite(scale) && scale >= 1 ? Math.round(base * scale) : base;
}
