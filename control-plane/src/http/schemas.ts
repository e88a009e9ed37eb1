import { ErrorEnvelope } from '@ark/shared';
import { type TSchema, Type } from '@sinclair/typebox';

const errorRef = Type.Ref(ErrorEnvelope);

/** Every route's error statuses, all answered with the envelope. */
export function withErrors<R extends Record<number, TSchema>>(responses: R, ...statuses: number[]) {
  const all: Record<number, TSchema> = { ...responses };
  for (const status of [401, 422, 429, ...statuses]) all[status] = errorRef;
  return all as R;
}
