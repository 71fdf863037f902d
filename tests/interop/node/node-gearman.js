// node-gearman 0.2.2 against gearwheel (tests/interop_node.rs).
//
// Usage: node node-gearman.js PORT worker
//        node node-gearman.js PORT client SCENARIO [ARG]
// The library has no ECHO and no status calls: the worker prints "ready" once connected (the
// test then waits for the server to list its functions) and "job NAME "PAYLOAD"" before each
// job. It sends CAN_DO and a GRAB_JOB per function, so several GRABs are outstanding at once.
'use strict';

const fs = require('fs');
const Gearman = require('node-gearman');

const { port, start } = require('./main');

function worker() {
  const g = new Gearman('127.0.0.1', port);
  g.on('connect', () => console.log('ready'));
  g.on('error', (e) => {
    console.error('worker error', e);
    process.exit(1);
  });
  const fns = {
    reverse: (payload, w) => w.end(payload.toString().split('').reverse().join('')),
    // Two WORK_DATA chunks, then WORK_COMPLETE with the last one.
    chunks: (payload, w) => {
      w.write('a-');
      w.write('b-');
      w.end('c:' + payload.toString());
    },
    fail: (payload, w) => w.error(),
    log: (payload, w) => w.end('logged'),
    hold: (payload, w) => {
      const deadline = Date.now() + 10000;
      const wait = () => {
        if (fs.existsSync(payload.toString()) || Date.now() > deadline) w.end('released');
        else setTimeout(wait, 20);
      };
      wait();
    },
  };
  for (const [name, fn] of Object.entries(fns)) {
    g.registerWorker(name, (payload, w) => {
      // JSON, so that the NUL the library appends to a background job's data shows.
      console.log('job', name, JSON.stringify(payload.toString()));
      fn(payload, w);
    });
  }
  g.connect();
}

// One foreground job: its data chunks and how it ended, as one line.
function run(g, name, payload, options) {
  return new Promise((resolve) => {
    const chunks = [];
    const job = g.submitJob(name, payload, options && options.unique, options || {});
    job.on('data', (d) => chunks.push(d.toString()));
    job.on('end', () => resolve('end ' + JSON.stringify(chunks)));
    job.on('error', (e) => resolve('error ' + e.message + ' ' + JSON.stringify(chunks)));
  });
}

async function client(scenario) {
  const g = new Gearman('127.0.0.1', port);
  g.on('error', (e) => {
    console.error('client error', e);
    process.exit(1);
  });
  if (scenario === 'do') {
    console.log('normal', await run(g, 'reverse', 'hello'));
    console.log('high', await run(g, 'reverse', 'high', { priority: 'high' }));
    console.log('low', await run(g, 'reverse', 'low', { priority: 'low', unique: 'ng-low' }));
    console.log('chunks', await run(g, 'chunks', 'x'));
    console.log('fail', await run(g, 'fail', 'x'));
    // Several jobs in flight on one connection at once.
    const all = await Promise.all(['one', 'two', 'three'].map((d) => run(g, 'reverse', d)));
    console.log('parallel', all.join(' | '));
  } else if (scenario === 'background') {
    // A background job gets no JOB_CREATED callback, and the library writes its `false`
    // callback as one more argument: the data arrives with a NUL after it ("L1\0").
    for (const [data, priority] of [['L1', 'low'], ['N1', 'normal'], ['H1', 'high']]) {
      g.submitJob('log', data, false, { background: true, priority });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    console.log('submitted');
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  g.close();
}

start(worker, client);
