#!/usr/bin/env node
// The `mcpool` command. All of it is in dist/cli.js; this file only runs it and exits with its code.
import { main } from '../dist/cli.js';

process.exit(await main(process.argv));
