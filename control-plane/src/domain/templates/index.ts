export * from './filters.js';
export * from './fit.js';
export * from './import.js';
export * from './template.js';
