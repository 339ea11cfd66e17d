/**
 * The second bundle (`dist/move.js`): moving servers into the pool needs the import logic and its
 * parsers, which a window loads only when its user moves servers.
 */
export { planMove } from './planMove.js';
export type { MoveOptions, MovePlan } from './planMove.js';
export { applyChanges, undoLastImport } from 'mcpool/import';
