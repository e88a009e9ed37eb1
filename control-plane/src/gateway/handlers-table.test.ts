import { CHANNEL_CATALOG, defineChannelCatalog, HANDLED_AGENT_MESSAGE_TYPES } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Services } from '../services/index.js';
import type { AgentMessageHandlers } from './handlers.js';
import { channelHandlerTable } from './handlers-table.js';

// The handler table's type is the guard: a message type added to the catalog without its handler in
// handlers-table.ts must fail `pnpm typecheck` (tsc compiles this file; the @ts-expect-error below fails the
// typecheck if the missing handler ever stops being an error, say the table turned into a Partial).

/** A throwaway reliable agent message, added to a copy of the catalog the way a new message would be. */
const ThrowawayProbeMessage = Type.Object(
  { v: Type.Literal(1), t: Type.Literal('throwaway_probe'), sid: Type.String(), seq: Type.Integer(), id: Type.Integer() },
  { additionalProperties: false },
);
const extended = defineChannelCatalog({
  ...CHANNEL_CATALOG,
  throwaway_probe: { schema: ThrowawayProbeMessage, from: 'agent', reliable: true },
});
type Extended = typeof extended;

type RealMessages = ReturnType<typeof channelHandlerTable>['messages'];
type TableServices = Pick<Services, 'jobs' | 'hosting'>;

/** What handlers-table.ts would be against the extended catalog, left as it is: the new type has no handler. */
function tableWithoutTheNewHandler(services: TableServices): AgentMessageHandlers<Extended> {
  const { messages } = channelHandlerTable(services);
  // @ts-expect-error Property 'throwaway_probe' is missing: the catalog holds a type the table does not handle.
  return { ...messages };
}

/** The same with its line added: compiles, and the handler gets the reliable shape (the transaction first). */
function tableWithTheNewHandler(services: TableServices): AgentMessageHandlers<Extended> {
  return {
    ...channelHandlerTable(services).messages,
    throwaway_probe: async (trx, machineId, msg, now) => {
      expectTypeOf(msg.id).toEqualTypeOf<number>();
      expectTypeOf(machineId).toEqualTypeOf<string>();
      expectTypeOf(now).toEqualTypeOf<Date>();
      await trx.selectFrom('agent_channel_state').select('machine_id').execute();
    },
  };
}

describe('the channel handler table', () => {
  it('fails the typecheck when the catalog gains an agent message type without a handler', () => {
    expectTypeOf<Exclude<keyof AgentMessageHandlers<Extended>, keyof RealMessages>>().toEqualTypeOf<'throwaway_probe'>();
    expectTypeOf<RealMessages>().not.toMatchTypeOf<AgentMessageHandlers<Extended>>();
    expectTypeOf<RealMessages>().toEqualTypeOf<AgentMessageHandlers>();
    expectTypeOf(tableWithoutTheNewHandler).returns.toEqualTypeOf<AgentMessageHandlers<Extended>>();
    expectTypeOf(tableWithTheNewHandler).returns.toEqualTypeOf<AgentMessageHandlers<Extended>>();
  });

  it('names a handler for every agent message type of the catalog the gateway does not consume itself', () => {
    // The handlers are only built here, never called: the services are not touched until a message arrives.
    const table = channelHandlerTable({ jobs: {}, hosting: {} } as unknown as TableServices);
    expect(Object.keys(table.messages).sort()).toEqual([...HANDLED_AGENT_MESSAGE_TYPES].sort());
    expect(HANDLED_AGENT_MESSAGE_TYPES).toEqual(
      expect.arrayContaining(['heartbeat', 'telemetry', 'meter_receipt', 'job_status', 'nettest_receipt']),
    );
    for (const handler of Object.values(table.messages)) expect(handler).toBeTypeOf('function');
  });
});
