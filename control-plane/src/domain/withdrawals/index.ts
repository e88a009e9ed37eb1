export * from './holds.js';
export * from './states.js';
export * from './addresses.js';
