export * from './headers.js';
export * from './errors.js';
export * from './events.js';
export * from './signature.js';
export * from './problem.js';
export * from './schedule.js';
