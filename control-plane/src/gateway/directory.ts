import type { Store } from '../store/db.js';
import { machinePublicKeyOf } from '../store/machines.js';
import type { MachineDirectory } from './handlers.js';

/** The real directory: the key each enrolled machine registered, from the machines table. */
export function machinesTableDirectory(store: Store): MachineDirectory {
  return { publicKeyOf: (machineId) => machinePublicKeyOf(store.db, machineId) };
}
