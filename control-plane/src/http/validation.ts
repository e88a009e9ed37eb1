import { decimalBoundOf } from '@ark/shared';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// Bodies are validated strictly (no coercion, extra properties refused, nothing removed silently);
// query strings, params and headers are text on the wire and are coerced to their declared types.
function makeAjv(coerce: boolean) {
  const ajv = new Ajv.default({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
    // Errors carry their schema, so a bounded decimal's refusal can name its bound (withOurRules).
    verbose: true,
  });
  addFormats.default(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/**
 * Ajv's verdict, then two rules of our own over what it accepted:
 * - a bounded decimal (MicroAmount, ByteCount, ...) is enforced by an exact pattern and a maxLength; a refusal by
 *   either says the bound (`must be a base-10 integer string from 0 to 1000000000000000`) instead of quoting the
 *   pattern;
 * - no string or key may hold U+0000: Postgres text cannot store it (the insert fails, a 500), and no field of ours
 *   means it, so it is refused here for every body, query string and path parameter alike.
 */
function withOurRules(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    const ok = validate(data);
    checked.errors = validate.errors;
    if (!ok) {
      for (const error of validate.errors ?? []) nameBound(error);
      return false;
    }
    const at = nulAt(data);
    if (at === null) return true;
    checked.errors = [
      { instancePath: at, schemaPath: '#', keyword: 'nul', params: {}, message: 'must not contain the NUL character (U+0000)' },
    ];
    return false;
  }) as ValidateFunction;
  return checked;
}

/** The JSON pointer of the first string or key holding U+0000, or null. Iterative: bodies may nest thousands deep. */
function nulAt(data: unknown): string | null {
  const stack: Array<[unknown, string]> = [[data, '']];
  while (stack.length > 0) {
    const [value, path] = stack.pop() as [unknown, string];
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`]);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        const here = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (key.includes('\u0000')) return here;
        stack.push([inner, here]);
      }
    }
  }
  return null;
}

function nameBound(error: ErrorObject): void {
  if (error.keyword !== 'pattern' && error.keyword !== 'maxLength') return;
  const max = decimalBoundOf(error.parentSchema as { pattern?: unknown } | undefined);
  if (max !== undefined) error.message = `must be a base-10 integer string from 0 to ${max}`;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return withOurRules(ajv.compile(schema as object)) as ReturnType<FastifySchemaCompiler<unknown>>;
};
