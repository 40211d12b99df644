import { JobsError } from '../../lib/model/errors.js';
import { serializePayload } from '../../lib/model/payload.js';
import { uuidv7 } from '../../lib/model/uuid.js';

describe('serializePayload', () => {
  it('returns the JSON of plain data', () => {
    expect(serializePayload('j', { a: [1, 'x', null, true], b: { c: 1.5 } }, 1000)).toBe(
      '{"a":[1,"x",null,true],"b":{"c":1.5}}',
    );
    expect(serializePayload('j', undefined, 1000)).toBe('null');
  });

  it.each([
    [{ when: new Date(0) }, '$.when (a Date'],
    [{ n: Number.NaN }, '$.n (NaN is not a finite number)'],
    [{ list: [1, undefined] }, '$.list[1] (undefined)'],
    [{ m: new Map() }, '$.m (a Map'],
    [{ e: new (class Money {})() }, '$.e (an instance of Money)'],
    [{ s: Symbol('x') }, '$.s (a symbol)'],
  ])('refuses %p naming the path', (payload, fragment) => {
    expect(() => serializePayload('my-job', payload, 1000)).toThrow(JobsError);
    expect(() => serializePayload('my-job', payload, 1000)).toThrow(fragment);
  });

  it('measures size in UTF-8 bytes', () => {
    expect(() => serializePayload('big', { s: 'é'.repeat(10) }, 20)).toThrow(
      /"big": the payload is 28 bytes, over maxPayloadBytes \(20\)/,
    );
  });

  it('accepts objects that define toJSON', () => {
    expect(serializePayload('j', { v: { toJSON: () => 'x' } }, 100)).toBe('{"v":"x"}');
  });

  it('refuses what a toJSON() returns when jsonb would refuse it, naming where it landed', () => {
    expect(() => serializePayload('j', { v: { toJSON: () => ({ w: 'a\u0000' }) } }, 100)).toThrow(
      '$.v.w (a NUL character at index 1, in what a toJSON() returned)',
    );
    expect(() => serializePayload('j', [{ toJSON: () => 'x\ud800' }], 100)).toThrow('$[0] (a lone UTF-16 surrogate');
  });

  it('refuses a nested toJSON() that returns nothing, which JSON would drop (or turn into null in an array)', () => {
    expect(() => serializePayload('j', { keep: 1, v: { toJSON: () => undefined } }, 100)).toThrow(
      '$.v (its toJSON() returned nothing (it would be dropped))',
    );
    expect(() => serializePayload('j', [1, { toJSON: () => () => 0 }], 100)).toThrow(
      '$[1] (its toJSON() returned a function',
    );
    // toJSON gets the key JSON.stringify would give it.
    const keys: string[] = [];
    const spy = { toJSON: (key: string) => (keys.push(key), 'x') };
    expect(serializePayload('j', { a: spy, list: [spy] }, 100)).toBe('{"a":"x","list":["x"]}');
    expect(keys).toEqual(['a', '0', 'a', '0']);
  });

  it('refuses named properties on an array, which JSON leaves out', () => {
    const tagged = Object.assign([1, 2], { total: 2 });
    expect(() => serializePayload('j', { rows: tagged }, 100)).toThrow(
      '$.rows.total (a named property on an array (it would be dropped))',
    );
    expect(serializePayload('j', { rows: [1, 2] }, 100)).toBe('{"rows":[1,2]}');
  });

  it('accepts text that spells an escape: a backslash followed by "u0000" or "ud800" is no NUL or surrogate', () => {
    const payload = { path: 'C:\\u0000\\ud800', json: JSON.stringify('\u0000') };
    expect(JSON.parse(serializePayload('j', payload, 1000))).toEqual(payload);
    expect(serializePayload('j', { v: { toJSON: () => '\\u0000' } }, 100)).toBe('{"v":"\\\\u0000"}');
  });
});

describe('uuidv7', () => {
  it('is a version-7 UUID whose order follows time', () => {
    const a = uuidv7(1_700_000_000_000);
    const b = uuidv7(1_700_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
    expect(a.slice(0, 13).replace('-', '')).toBe((1_700_000_000_000).toString(16).padStart(12, '0'));
  });

  it('follows the order ids are made in within one millisecond (a ManualClock makes every enqueue of a test one instant)', () => {
    const ids = Array.from({ length: 20_000 }, () => uuidv7(1_700_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });
});
