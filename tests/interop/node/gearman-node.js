// gearman-node 2.0.13 against gearwheel (tests/interop_node.rs).
//
// Usage: node gearman-node.js PORT worker
//        node gearman-node.js PORT client SCENARIO
// A gearman-node Worker is one connection for one function (RESET_ABILITIES, CAN_DO, GRAB_JOB);
// the client submits SUBMIT_JOB only, with the unique "false" turned into an empty one. The
// worker prints "ready" once its connections are up and "job NAME PAYLOAD" before each job.
'use strict';

const fs = require('fs');
const gearman = require('gearman-node');

const { port, start } = require('./main');
const options = { host: '127.0.0.1', port };

function worker() {
  const fns = {
    reverse: (payload, w) => w.complete(payload.toString().split('').reverse().join('')),
    progress: (payload, w) => {
      w.status(1, 2);
      w.data('chunk');
      w.warning('careful');
      w.status(2, 2);
      w.complete('done:' + payload.toString());
    },
    // A WORK_WARNING with the reason, then WORK_FAIL.
    fail: (payload, w) => w.error('nope'),
    hold: (payload, w) => {
      const deadline = Date.now() + 10000;
      const wait = () => {
        if (fs.existsSync(payload.toString()) || Date.now() > deadline) w.complete('released');
        else setTimeout(wait, 20);
      };
      wait();
    },
  };
  let up = 0;
  for (const [name, fn] of Object.entries(fns)) {
    const w = new gearman.Worker(
      name,
      (payload, helper) => {
        console.log('job', name, payload.toString());
        fn(payload, helper);
      },
      options,
    );
    w.on('error', (e) => {
      console.error('worker error', name, e);
      process.exit(1);
    });
    w.once('connect', () => {
      up += 1;
      if (up === Object.keys(fns).length) console.log('ready');
    });
  }
}

// One job: every event it got, in order, as one line.
function run(c, name, payload) {
  return new Promise((resolve) => {
    const events = [];
    const job = c.submitJob(name, payload);
    job.on('data', (h, d) => events.push('data:' + d));
    job.on('warning', (h, w) => events.push('warning:' + w));
    job.on('status', (h, n, d) => events.push('status:' + n + '/' + d));
    job.on('complete', (h, d) => resolve(events.concat(['complete:' + d]).join(' ')));
    job.on('fail', () => resolve(events.concat(['fail']).join(' ')));
  });
}

async function client(scenario) {
  const c = new gearman.Client(options);
  c.on('error', (e) => {
    console.error('client error', e);
    process.exit(1);
  });
  if (scenario === 'do') {
    console.log('normal', await run(c, 'reverse', 'hello'));
    console.log('progress', await run(c, 'progress', 'p'));
    console.log('fail', await run(c, 'fail', 'x'));
    const all = await Promise.all(['one', 'two', 'three'].map((d) => run(c, 'reverse', d)));
    console.log('parallel', all.join(' | '));
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  c.disconnect();
}

start(worker, client);
