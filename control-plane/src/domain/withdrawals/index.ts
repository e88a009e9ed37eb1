export * from './holds.js';
export * from './states.js';
