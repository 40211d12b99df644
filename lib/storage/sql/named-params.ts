/**
 * Statements with named parameters. A statement declares its parameters as a
 * typed object and the order they are numbered in; its text is rendered once
 * from placeholders (`$1`, `$2`, … in that order), and its values are read
 * from the same object at each call. A value cannot drift from its placeholder:
 * a missing, misspelled or mistyped key is a compile error at the call site.
 *
 * The declared order is what keeps a text stable: it is the order the
 * placeholders had when they were written by hand, and a prepared
 * statement's name is a hash of its text.
 */

type Row = Record<string, unknown>;

/** What runs a statement: every SQL executor of storage fits. */
export interface Queryable {
  query<T = Row>(text: string, values?: unknown[], name?: string): Promise<T[]>;
}

/** Each parameter's placeholder (`$n`), for the text's renderer. */
export type Placeholders<P> = { readonly [K in keyof P]-?: string };

/** A statement's text, and its values from named arguments. */
export interface Statement<P> {
  readonly text: string;
  /** The parameters in placeholder order: `$1` is `params[0]`. */
  readonly params: ReadonlyArray<keyof P & string>;
  /** The name it is prepared under, when it is a named prepared statement. */
  readonly name: string | undefined;
  /** The values in placeholder order. */
  values(args: P): unknown[];
  /** Runs it on `on` with `args`. */
  run<T = Row>(on: Queryable, args: P): Promise<T[]>;
  /** The same statement, prepared under `name` on each connection. */
  named(name: string): Statement<P>;
}

/** The arguments a statement takes: what a storage's run(key, args) checks against its key. */
export type ArgsOf<S> = S extends Statement<infer P> ? P : never;

/** A statement that takes no parameter. */
export type NoParams = Record<string, never>;

/** Keys of P the declared order leaves out: never when it names them all. */
type Unlisted<P, K extends readonly PropertyKey[]> = Exclude<keyof P, K[number]>;

class NamedStatement<P> implements Statement<P> {
  constructor(
    readonly text: string,
    readonly params: ReadonlyArray<keyof P & string>,
    readonly name: string | undefined,
  ) {}

  values(args: P): unknown[] {
    // A plain loop: the claim and outcome writes call this tens of thousands of times a second.
    const { params } = this;
    const values: unknown[] = [];
    for (let i = 0; i < params.length; i++) values.push(args[params[i]!]);
    return values;
  }

  run<T = Row>(on: Queryable, args: P): Promise<T[]> {
    return on.query<T>(this.text, this.values(args), this.name);
  }

  named(name: string): Statement<P> {
    return new NamedStatement<P>(this.text, this.params, name);
  }

  /** Its text, where it is written into other SQL (PREPARE, EXPLAIN). */
  toString(): string {
    return this.text;
  }
}

/**
 * `statement<{ jobId: string; attempt: number }>()(['jobId', 'attempt'], (p) => `… id = ${p.jobId} AND attempt = ${p.attempt}`)`:
 * the order must name every key of P once; `$n` is the n-th key's placeholder, the same for each use of it.
 * Curried so that P is given and the order inferred.
 */
export function statement<P extends object = NoParams>() {
  return <const K extends ReadonlyArray<keyof P & string>>(
    order: K & ([Unlisted<P, K>] extends [never] ? unknown : { missingParams: Unlisted<P, K> }),
    render: (p: Placeholders<P>) => string,
  ): Statement<P> => {
    const params: ReadonlyArray<keyof P & string> = [...order];
    if (new Set(params).size !== params.length) throw new Error(`A parameter is listed twice: ${params.join(', ')}`);
    const placeholders = Object.fromEntries(params.map((key, i) => [key, `$${i + 1}`])) as Placeholders<P>;
    return new NamedStatement<P>(render(placeholders), params, undefined);
  };
}

/** A statement without parameters. */
export function fixedStatement(text: string): Statement<NoParams> {
  return new NamedStatement<NoParams>(text, [], undefined);
}

/** Whether `value` is a Statement (the SQL snapshots find them among a builder's entries). */
export function isStatement(value: unknown): value is Statement<never> {
  return value instanceof NamedStatement;
}

/** A builder's statements, each of them prepared under `name(key)` unless that is undefined. */
export function withNames<S extends Record<string, unknown>>(
  sql: S,
  name: (key: string, text: string) => string | undefined,
): S {
  const named: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(sql)) {
    const as = isStatement(value) ? name(key, value.text) : undefined;
    named[key] = as === undefined ? value : (value as Statement<never>).named(as);
  }
  return named as S;
}
