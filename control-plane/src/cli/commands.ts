// Imports each area's CLI module for its registerCliCommands side effect.
export {};
import './accounts.js';
import './templates.js';
import './ledger.js';
import './hosts.js';
import './jobs.js';
