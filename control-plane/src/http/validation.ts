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
    // Errors carry their schema, so a bounded decimal's refusal can name its bound (boundMessages).
    verbose: true,
  });
  addFormats.default(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/**
 * A bounded decimal (MicroAmount, ByteCount, ...) is enforced by an exact pattern and a maxLength; a refusal by
 * either says the bound (`must be a base-10 integer string from 0 to 1000000000000000`) instead of quoting the
 * pattern.
 */
function boundMessages(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    const ok = validate(data);
    checked.errors = validate.errors;
    if (!ok) for (const error of validate.errors ?? []) nameBound(error);
    return ok;
  }) as ValidateFunction;
  return checked;
}

function nameBound(error: ErrorObject): void {
  if (error.keyword !== 'pattern' && error.keyword !== 'maxLength') return;
  const max = decimalBoundOf(error.parentSchema as { pattern?: unknown } | undefined);
  if (max !== undefined) error.message = `must be a base-10 integer string from 0 to ${max}`;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return boundMessages(ajv.compile(schema as object)) as ReturnType<FastifySchemaCompiler<unknown>>;
};
