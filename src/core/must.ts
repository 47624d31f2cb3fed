// An invariant the types cannot carry, checked: a value the flow guarantees, or a loud
// error that names it, never an undefined read further on.
export function must<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`internal error: ${what} is missing`);
  return value;
}
