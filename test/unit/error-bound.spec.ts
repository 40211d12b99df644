import { boundError, boundText, checkMaxErrorBytes, JobsError } from '../../lib/model/index.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('boundText', () => {
  it('keeps a text that fits, to the byte', () => {
    expect(boundText('a'.repeat(300), 300)).toBe('a'.repeat(300));
    expect(boundText('é'.repeat(150), 300)).toBe('é'.repeat(150));
  });

  it('cuts a longer one to at most the bound, naming how many bytes it left out', () => {
    for (const max of [256, 257, 1000, 8192]) {
      for (const unit of ['a', 'é', '€', '😀']) {
        const text = unit.repeat(20_000);
        const cut = boundText(text, max);
        expect(bytes(cut)).toBeLessThanOrEqual(max);
        const [, kept, left] = /^(.*)… \[cut (\d+) bytes\]$/su.exec(cut)!;
        // Whole characters only, and the count adds up to the original.
        expect(kept!.replaceAll(unit, '')).toBe('');
        expect(bytes(kept!) + Number(left)).toBe(bytes(text));
        expect(bytes(cut)).toBeGreaterThan(max - 40);
      }
    }
  });

  it('cuts the name, the message and the stack of an error each on its own, keeping other fields', () => {
    // Message and stack both over the bound, by different amounts: each is cut, and counts its own cut.
    const error = boundError({ name: 'E', message: 'm'.repeat(5000), stack: 's'.repeat(3000), code: 7 } as never, 400);
    expect(error.name).toBe('E');
    expect(bytes(error.message)).toBeLessThanOrEqual(400);
    expect(error.message).toMatch(/^m+… \[cut \d+ bytes\]$/);
    expect(bytes(error.stack!)).toBeLessThanOrEqual(400);
    expect(error.stack).toMatch(/^s+… \[cut \d+ bytes\]$/);
    expect(Number(/cut (\d+)/.exec(error.stack!)![1]) + error.stack!.indexOf('…')).toBe(3000);
    expect((error as unknown as { code: number }).code).toBe(7);
    expect(boundError({ name: 'E', message: 'short' }, 400)).toEqual({ name: 'E', message: 'short' });
  });
});

describe('checkMaxErrorBytes', () => {
  it('defaults to 8 KiB and refuses what is not an integer of at least 256', () => {
    expect(checkMaxErrorBytes(undefined)).toBe(8192);
    expect(checkMaxErrorBytes(256)).toBe(256);
    for (const bad of [255, 0, -1, 1.5, '8192', null]) {
      expect(() => checkMaxErrorBytes(bad)).toThrow(JobsError);
      expect(() => checkMaxErrorBytes(bad)).toThrow('Potential fix: maxErrorBytes: 8192');
    }
  });
});
