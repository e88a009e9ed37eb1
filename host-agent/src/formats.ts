import { UUID_PATTERN } from '@ark/shared';
import { FormatRegistry } from '@sinclair/typebox';

// The string formats the shared schemas name (uuid, date-time). TypeBox refuses unknown formats, and the
// schemas' patterns already pin the syntax, so these add only the calendar check. The channel codec registers
// the same ones; whichever module loads first wins, and both agree.

export function registerFormats(): void {
  if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', (value) => UUID_PATTERN.test(value));
  if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => !Number.isNaN(Date.parse(value)));
}
