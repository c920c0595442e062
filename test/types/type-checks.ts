// Compile-time checks (issue 29 item 15): `npm run typecheck` compiles this file, so a check that does not
// hold fails the type-check, naming the line. Nothing here runs.

/** `true` when `A` and `B` are the same type (not merely assignable either way): optionality, `readonly`, `any` count. */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** `true` when a value of `From` can be given where `To` is asked for. */
export type Assignable<From, To> = [From] extends [To] ? true : false;

/** Compiles only for `true`: `const ok: Expect<Equal<A, B>> = true`. */
export type Expect<T extends true> = T;
