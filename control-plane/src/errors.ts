import { ERROR_CATALOG, type ErrorCode } from '@ark/shared';

/** A failure the caller can act on. Mapped onto the contract's envelope by the one error handler. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  constructor(code: ErrorCode, message?: string) {
    const spec = ERROR_CATALOG[code];
    super(message ?? spec.message);
    this.name = 'DomainError';
    this.code = code;
    this.status = spec.status;
    this.retryable = spec.retryable;
  }
}

export const fail = (code: ErrorCode, message?: string): never => {
  throw new DomainError(code, message);
};
