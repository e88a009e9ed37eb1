import { MICRO_AMOUNT_MAX, MicroAmount } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { validatorCompiler } from './validation.js';

type Check = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null };

const compile = (schema: object, httpPart = 'body'): Check =>
  validatorCompiler({ schema, httpPart, method: 'POST', url: '/x' } as Parameters<typeof validatorCompiler>[0]) as unknown as Check;

describe('validatorCompiler', () => {
  it('names the bound when a bounded decimal is refused, by its pattern or by its length', () => {
    const check = compile(Type.Object({ budget_micro: MicroAmount }));
    for (const budget of [(MICRO_AMOUNT_MAX + 1n).toString(), (2n ** 63n).toString(), '1'.repeat(38)]) {
      expect(check({ budget_micro: budget })).toBe(false);
      expect(check.errors?.[0]).toMatchObject({
        instancePath: '/budget_micro',
        message: `must be a base-10 integer string from 0 to ${MICRO_AMOUNT_MAX}`,
      });
    }
    expect(check({ budget_micro: MICRO_AMOUNT_MAX.toString() })).toBe(true);
  });

  it('refuses U+0000 in any string or key, wherever it is, bodies and query strings alike', () => {
    const open = Type.Object({ reason: Type.String(), env: Type.Record(Type.String(), Type.String()), tags: Type.Array(Type.String()) });
    const check = compile(open);
    expect(check({ reason: 'ok', env: { A: 'b' }, tags: ['x'] })).toBe(true);
    expect(check({ reason: 'a\u0000b', env: {}, tags: [] })).toBe(false);
    expect(check.errors?.[0]).toMatchObject({ instancePath: '/reason', message: 'must not contain the NUL character (U+0000)' });
    expect(check({ reason: 'ok', env: { 'A\u0000': 'b' }, tags: [] })).toBe(false);
    expect(check.errors?.[0]?.instancePath).toBe('/env/A\u0000');
    expect(check({ reason: 'ok', env: {}, tags: ['x', '\u0000'] })).toBe(false);
    expect(check.errors?.[0]?.instancePath).toBe('/tags/1');
    const query = compile(Type.Object({ gpu_model: Type.Optional(Type.String()) }), 'querystring');
    expect(query({ gpu_model: '\u0000' })).toBe(false);
  });

  it('walks a body nested far deeper than the stack would allow', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const check = compile(Type.Object({ any: Type.Unknown() }));
    expect(check({ any: deep })).toBe(false);
  });
});
