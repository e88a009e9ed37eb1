export { type Clock, type ClockTimer, sleepOn, systemClock } from './clock.js';
export { ManualClock } from './manual-clock.js';
