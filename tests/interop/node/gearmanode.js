// gearmanode 0.9.2 against gearwheel (tests/interop_node.rs).
//
// Usage: node gearmanode.js PORT worker
//        node gearmanode.js PORT client SCENARIO [ARG]
// The worker prints "ready" once it has registered its functions (after an ECHO round trip,
// so the server has seen every CAN_DO) and "job NAME PAYLOAD" before each job.
'use strict';

const fs = require('fs');
const gearmanode = require('gearmanode');

// gearmanode logs through winston; keep its chatter off stdout, which the tests compare.
for (const name of ['Client', 'Worker', 'JobServer', 'Job', 'LBStrategy', 'protocol']) {
  const logger = require('winston').loggers.get(name);
  logger.clear();
  logger.add(new (require('winston').transports.Console)({ level: 'error', stderrLevels: ['error'] }));
}

const { port, start } = require('./main');

function worker() {
  const w = gearmanode.worker({ port, host: '127.0.0.1' });
  w.setWorkerId('gearmanode-worker');
  const fns = {
    reverse: (job) => job.workComplete(job.payload.toString().split('').reverse().join('')),
    progress: (job) => {
      job.reportStatus(1, 2);
      job.sendWorkData('chunk');
      job.reportWarning('careful');
      job.reportStatus(2, 2);
      job.workComplete('done:' + job.payload.toString());
    },
    fail: (job) => job.reportError(),
    throw: (job) => job.reportException('boom'),
    log: (job) => job.workComplete('logged'),
    hold: (job) => {
      job.reportStatus(3, 7);
      const deadline = Date.now() + 10000;
      const wait = () => {
        if (fs.existsSync(job.payload.toString()) || Date.now() > deadline) {
          job.workComplete('released');
        } else {
          setTimeout(wait, 20);
        }
      };
      wait();
    },
  };
  for (const [name, fn] of Object.entries(fns)) {
    w.addFunction(name, (job) => {
      console.log('job', job.name, job.payload.toString());
      fn(job);
    });
  }
  const js = w.jobServers[0];
  js.once('echo', () => console.log('ready'));
  js.echo('registered');
  w.on('error', (e) => {
    console.error('worker error', e);
    process.exit(1);
  });
}

// Submit one foreground job and resolve with a line describing every event it got.
function run(client, name, payload, options) {
  return new Promise((resolve) => {
    const events = [];
    const job = client.submitJob(name, payload, Object.assign({ toStringEncoding: 'utf8' }, options));
    job.on('workData', (d) => events.push('data:' + d));
    job.on('warning', (d) => events.push('warning:' + d));
    job.on('status', (s) => events.push('status:' + s.percent_done_num + '/' + s.percent_done_den));
    job.on('complete', () => resolve(events.concat(['complete:' + job.response]).join(' ')));
    job.on('failed', () => resolve(events.concat(['failed']).join(' ')));
    job.on('exception', (d) => resolve(events.concat(['exception:' + d]).join(' ')));
    job.on('error', (e) => resolve(events.concat(['error:' + e.message]).join(' ')));
  });
}

async function client(scenario) {
  const c = gearmanode.client({ port, host: '127.0.0.1' });
  c.on('error', (e) => {
    console.error('client error', e);
    process.exit(1);
  });
  if (scenario === 'do') {
    const js = c.jobServers[0];
    const opt = new Promise((resolve) => js.once('option', resolve));
    js.setOption('exceptions');
    console.log('option', await opt);
    console.log('normal', await run(c, 'reverse', 'hello'));
    console.log('high', await run(c, 'reverse', 'high', { priority: 'HIGH' }));
    console.log('low', await run(c, 'reverse', 'low', { priority: 'LOW', unique: 'gn-low' }));
    console.log('progress', await run(c, 'progress', 'p'));
    console.log('fail', await run(c, 'fail', 'x'));
    console.log('throw', await run(c, 'throw', 'x'));
  } else if (scenario === 'background') {
    for (const [data, priority] of [['L1', 'LOW'], ['N1', 'NORMAL'], ['H1', 'HIGH']]) {
      const job = c.submitJob('log', data, { background: true, priority });
      await new Promise((resolve) => job.once('created', resolve));
      console.log('submitted', data, job.handle ? 'handle' : 'none');
    }
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  c.close();
}

start(worker, client);
