/**
 * Everything here is public (`mcpool/import`): the logic of `mcpool import` for a program that
 * moves a user's servers into the pool itself (the VS Code extension, for one workspace). Reading
 * the clients' files, planning the merge into the daemon's config (pure), writing the changes
 * with a backup, and undoing the last import — the same functions the command runs.
 */
export { CLIENT_IDS, candidateFiles, parseClientDocument, readClientFiles, serversLocations } from './sources.js';
export type { ClientFile, ClientId, FileFormat, FoundProblem, LocateOptions as ClientFilesOptions, ReadClientFile, ServersLocation } from './sources.js';
export { pointerEntry } from './pointers.js';
export { planImport } from './plan.js';
export type { FileChange, ImportPlan, ImportedServer, PlanOptions, PoolAddress, SkippedServer } from './plan.js';
export { applyChanges, backupRoot, undoLastImport } from './backup.js';
export type { UndoResult } from './backup.js';
