import {
  frozenContext,
  JobsError,
  MAX_CONTEXT_BYTES,
  NO_CONTEXT,
  runningJobContext,
  runWithJobContext,
  serializeContext,
} from '../../lib/model/index.js';
import { defaultContext } from '../../lib/queue/job-context-capture.js';
import { stepContexts, type ContextNode } from '../../lib/queue/workflow-contexts.js';

const WHERE = "enqueue('send-receipt')";

describe('serializeContext', () => {
  it('a plain object becomes its JSON; undefined stays "not given" and null "none"', () => {
    expect(serializeContext(WHERE, { tenantId: 't-1', n: 2, ok: true, list: [null] })).toBe(
      '{"tenantId":"t-1","n":2,"ok":true,"list":[null]}',
    );
    expect(serializeContext(WHERE, Object.assign(Object.create(null) as object, { a: 1 }))).toBe('{"a":1}');
    expect(serializeContext(WHERE, undefined)).toBeUndefined();
    expect(serializeContext(WHERE, null)).toBeNull();
  });

  it.each([
    [[1], /"context" must be a plain object, got an array/],
    ['t', /"context" must be a plain object, got the string "t"/],
    [5, /"context" must be a plain object, got 5/],
    [new Map(), /"context" must be a plain object, got an object \(an instance of Map\)/],
    [{ f: () => 1 }, /"context" is not JSON at \$\.f \(a function\)/],
    [{ u: undefined }, /"context" is not JSON at \$\.u \(undefined\)/],
    [{ d: { at: new Date(0) } }, /"context" is not JSON at \$\.d\.at \(a Date/],
    [{ n: Number.NaN }, /"context" is not JSON at \$\.n \(NaN is not a finite number\)/],
  ])('refuses %p naming the call, the field and the fix', (value, message) => {
    const error = (() => {
      try {
        serializeContext(WHERE, value);
      } catch (e) {
        return e as Error;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(JobsError);
    expect(error!.message).toMatch(message);
    expect(error!.message.startsWith(`${WHERE}: "context"`)).toBe(true);
    expect(error!.message).toContain('Potential fix:');
  });

  it(`is bounded at ${MAX_CONTEXT_BYTES} bytes of JSON (UTF-8), its own bound`, () => {
    const at = (n: number) => ({ s: 'x'.repeat(n - '{"s":""}'.length) });
    expect(serializeContext(WHERE, at(MAX_CONTEXT_BYTES))).toHaveLength(MAX_CONTEXT_BYTES);
    expect(() => serializeContext(WHERE, at(MAX_CONTEXT_BYTES + 1))).toThrow(
      /"context" is 8193 bytes of JSON, over its bound of 8192/,
    );
    // Bytes, not characters: 3000 three-byte characters are 9000 bytes.
    expect(() => serializeContext(WHERE, { s: '€'.repeat(3000) })).toThrow(/over its bound/);
  });
});

describe('frozenContext', () => {
  it('freezes a stored context all the way down; none reads as the shared empty object', () => {
    const ctx = frozenContext({ a: { b: [1, { c: 2 }] } }) as { a: { b: [number, { c: number }] } };
    expect(Object.isFrozen(ctx)).toBe(true);
    expect(Object.isFrozen(ctx.a.b)).toBe(true);
    expect(Object.isFrozen(ctx.a.b[1])).toBe(true);
    expect(frozenContext(null)).toBe(NO_CONTEXT);
    expect(frozenContext(undefined)).toEqual({});
  });
});

describe('defaultContext', () => {
  it("is the running job's context inside runWithJobContext, else what contextFrom reads now", async () => {
    const from = () => ({ tenantId: 'from-request' });
    expect(defaultContext(WHERE, undefined)).toBeUndefined();
    expect(defaultContext(WHERE, from)).toEqual({ tenantId: 'from-request' });
    const running = Object.freeze({ tenantId: 'from-job' });
    await runWithJobContext(running, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(runningJobContext()).toBe(running);
      expect(defaultContext(WHERE, from)).toBe(running);
    });
    expect(runningJobContext()).toBeUndefined();
  });

  it('a contextFrom that throws is a JobsError naming the call', () => {
    expect(() =>
      defaultContext(WHERE, () => {
        throw new Error('no request');
      }),
    ).toThrow(/enqueue\('send-receipt'\): JobsModule's "contextFrom" threw \(no request\)/);
  });
});

describe('stepContexts', () => {
  const node = (key: string, after: string[] = [], context?: Record<string, unknown> | null): ContextNode => ({
    key,
    options: context === undefined ? {} : { context },
    after: after.map((k) => ({ key: k })),
  });
  const contexts = (nodes: ContextNode[], fallback?: unknown) =>
    Object.fromEntries(
      [
        ...stepContexts(
          nodes,
          nodes.map((n) => n.key),
          fallback,
          'flow()',
        ),
      ].map(([k, o]) => [k, o.context]),
    );

  it("a step without its own takes its parents', a root the fallback; its own replaces both", () => {
    expect(
      contexts([node('a', [], { t: 1 }), node('b', ['a']), node('c', ['b'], { t: 2 }), node('d', ['c']), node('e')], {
        t: 0,
      }),
    ).toEqual({ a: { t: 1 }, b: { t: 1 }, c: { t: 2 }, d: { t: 2 }, e: { t: 0 } });
    // null is a context of its own ("none"), and is inherited as such.
    expect(contexts([node('a', [], null), node('b', ['a'])], { t: 0 })).toEqual({ a: null, b: null });
    // Without a fallback, a root keeps its options as they are (the factory reads the default).
    expect(contexts([node('a'), node('b', ['a'])])).toEqual({ a: undefined, b: undefined });
  });

  it('parents that agree (the same JSON) pass it on; parents that differ are refused', () => {
    expect(contexts([node('a', [], { t: 1 }), node('b', [], { t: 1 }), node('j', ['a', 'b'])])).toEqual({
      a: { t: 1 },
      b: { t: 1 },
      j: { t: 1 },
    });
    expect(() => contexts([node('a', [], { t: 1 }), node('b', [], { t: 2 }), node('j', ['a', 'b'])])).toThrow(
      /flow\(\): step "j" waits on "a" and "b", whose contexts differ, so the "context" it would inherit is unclear/,
    );
    expect(contexts([node('a', [], { t: 1 }), node('b', [], { t: 2 }), node('j', ['a', 'b'], { t: 3 })]).j).toEqual({
      t: 3,
    });
  });
});
