#!/usr/bin/env node
// The `mcpool` command. All of it is in dist/cli.js; this file only runs it and exits with its code.
import { holdYoungGeneration } from '../dist/heapWatch.js';

// `mcpool serve` is the long-lived daemon: its young generation is held at its initial size from
// before its modules load (the rule and why are in `holdYoungGeneration`).
if (process.argv[2] === 'serve') holdYoungGeneration();

const { main } = await import('../dist/cli.js');
process.exit(await main(process.argv));
