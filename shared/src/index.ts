export * from './formats.js';
export * from './money.js';
export * from './errors.js';
export * from './http/common.js';
export * from './channel/messages.js';
export * from './channel/manifest.js';
export * from './channel/codec.js';
export * from './http/billing.js';
