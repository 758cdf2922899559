// One write's decisions, written once for both adapters. A write whose steps depend on what its
// earlier statements found (acceptance: was the delivery new, did the debit pass) is a generator
// that yields the step it needs next and receives its result; each adapter names its statements
// for those steps and drives the generator: SQLite synchronously inside its savepoint (its group
// commit cannot wait for a promise), PostgreSQL awaiting each statement in its transaction. The
// order of the steps, and what each outcome means, live only in the generator.

/** The steps a write may ask for, by name: each adapter implements them (see Driven and Awaited). */
export type StepFunctions<S> = { [K in keyof S]: (...args: never[]) => unknown };

type Args<F> = F extends (...args: infer A) => unknown ? A : never;
type Result<F> = F extends (...args: never[]) => infer R ? R : never;

/** One step asked for: its name and arguments. */
export type StepCall<S> = { [K in keyof S]: { name: K; args: Args<S[K]> } }[keyof S];

/** A write's decisions: yields the steps it needs, returns its outcome. */
export type Decisions<S, R> = Generator<StepCall<S>, R, unknown>;

/** The same steps answered by promises (PostgreSQL's statements). */
export type Awaited<S> = { [K in keyof S]: (...args: Args<S[K]>) => Promise<Result<S[K]>> };

/** `yield* step('name', ...args)` inside a generator of Decisions<S, R>: the step's result, typed. */
export function stepsOf<S extends StepFunctions<S>>() {
  return function* step<K extends keyof S>(name: K, ...args: Args<S[K]>): Generator<StepCall<S>, Result<S[K]>, unknown> {
    return (yield { name, args } as StepCall<S>) as Result<S[K]>;
  };
}

/** Runs the decisions to their outcome with synchronous steps. A step that throws ends the write with its error. */
export function drive<S extends StepFunctions<S>, R>(decisions: Decisions<S, R>, steps: S): R {
  let next = decisions.next();
  while (!next.done) {
    const { name, args } = next.value;
    next = decisions.next((steps[name] as unknown as (...a: unknown[]) => unknown)(...(args as unknown[])));
  }
  return next.value;
}

/** Runs the decisions to their outcome, awaiting each step. */
export async function driveAsync<S extends StepFunctions<S>, R>(decisions: Decisions<S, R>, steps: Awaited<S>): Promise<R> {
  let next = decisions.next();
  while (!next.done) {
    const { name, args } = next.value;
    next = decisions.next(await (steps[name] as unknown as (...a: unknown[]) => Promise<unknown>)(...(args as unknown[])));
  }
  return next.value;
}
