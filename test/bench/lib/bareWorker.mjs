// A bare worker for actorRss.mjs: a module file (loaded as the actor's entry is, from disk) that
// answers each request on its port at once, and nothing else.
import { parentPort } from 'node:worker_threads';

parentPort.on('message', (message) => parentPort.postMessage({ k: 'res', id: message.id, ok: true, result: 'pong' }));
