import type { FoundationTables } from './tables/foundation.js';

// The whole database, as the union of each aggregate's tables.
export interface Database extends FoundationTables {}
