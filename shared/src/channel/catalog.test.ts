import type { TSchema } from '@sinclair/typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AgentMessageType,
  CHANNEL_CATALOG,
  channelMessageSpec,
  HANDLED_AGENT_MESSAGE_TYPES,
  isReliableAgentType,
  RELIABLE_AGENT_MESSAGE_TYPES,
  type ReliableAgentMessage,
  type ReliableAgentMessageType,
  type ServerMessageType,
} from './catalog.js';

/** The `t` literals a schema admits (a command is a union of one object per kind, all with t 'command'). */
function typeLiterals(schema: TSchema): unknown[] {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as TSchema[]).flatMap(typeLiterals);
  return [(schema.properties as Record<string, TSchema>).t?.const];
}

describe('the channel catalog', () => {
  it('keys each entry by the type its schema carries', () => {
    for (const [type, spec] of Object.entries(CHANNEL_CATALOG)) {
      expect(new Set(typeLiterals(spec.schema)), type).toEqual(new Set([type]));
    }
  });

  it('derives the reliable set the agent resends and the gateway applies once', () => {
    expect([...RELIABLE_AGENT_MESSAGE_TYPES].sort()).toEqual([
      'hardware_receipt',
      'job_event',
      'job_status',
      'meter_receipt',
      'nettest_receipt',
      'telemetry',
    ]);
    expectTypeOf<ReliableAgentMessageType>().toEqualTypeOf<
      'telemetry' | 'meter_receipt' | 'job_status' | 'job_event' | 'nettest_receipt' | 'hardware_receipt'
    >();
    expectTypeOf<ReliableAgentMessage['id']>().toEqualTypeOf<number>();
    // Commands are reliable too, but they go the other way: not in the agent's set.
    expect(CHANNEL_CATALOG.command.reliable).toBe(true);
    expect(isReliableAgentType('command')).toBe(false);
    expect(isReliableAgentType('heartbeat')).toBe(false);
    expect(isReliableAgentType('telemetry')).toBe(true);
  });

  it('splits the types by direction, and the handler table serves all agent types but the gateway’s own', () => {
    expectTypeOf<ServerMessageType>().toEqualTypeOf<
      'challenge' | 'welcome' | 'ack' | 'command' | 'relay_open' | 'relay_cancel' | 'logs_open' | 'logs_cancel'
    >();
    expectTypeOf<Extract<AgentMessageType, ServerMessageType>>().toBeNever();
    expect([...HANDLED_AGENT_MESSAGE_TYPES].sort()).toEqual([
      'hardware_receipt',
      'heartbeat',
      'job_event',
      'job_status',
      'meter_receipt',
      'nettest_receipt',
      'telemetry',
    ]);
    for (const type of ['hello', 'command_ack', 'relay_head', 'relay_data', 'relay_end', 'logs_data', 'logs_end'] as const) {
      expect(CHANNEL_CATALOG[type]).toMatchObject({ from: 'agent', consumedBy: 'gateway' });
    }
  });

  it('looks types up by own key only', () => {
    expect(channelMessageSpec('telemetry')).toBe(CHANNEL_CATALOG.telemetry);
    for (const t of ['__proto__', 'constructor', 'hasOwnProperty', 'self_test', 1, null]) expect(channelMessageSpec(t)).toBeUndefined();
  });
});
