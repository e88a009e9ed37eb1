export * from './accounts.js';
export * from './postings.js';
