import { ERROR_CATALOG, type ErrorCode, type ErrorSpec, UNAVAILABLE_STATE_STATUS } from '@ark/shared/errors';

/** A failure the caller can act on. Mapped onto the contract's envelope by the one error handler. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  /** `options.status`: one of the code's other statuses (`alsoStatus` in the catalog); anything else is a bug. */
  constructor(code: ErrorCode, message?: string, options: { status?: number } = {}) {
    const spec: ErrorSpec = ERROR_CATALOG[code];
    super(message ?? spec.message);
    this.name = 'DomainError';
    this.code = code;
    if (options.status !== undefined && options.status !== spec.status && !spec.alsoStatus?.includes(options.status))
      throw new RangeError(`error code ${code} never answers ${options.status}`);
    this.status = options.status ?? spec.status;
    this.retryable = spec.retryable;
  }
}

/** 503 UNAVAILABLE, retryable: money or provider state is unavailable now (contract part 7), e.g. deposits not configured. */
export function stateUnavailable(message: string): DomainError {
  return new DomainError('UNAVAILABLE', message, { status: UNAVAILABLE_STATE_STATUS });
}

export const fail = (code: ErrorCode, message?: string): never => {
  throw new DomainError(code, message);
};
