// abraxas 2.1.10 against gearwheel (tests/interop_node.rs).
//
// Usage: node abraxas.js PORT worker
//        node abraxas.js PORT client SCENARIO [ARG]
// The worker prints "ready" once its functions are registered (an ECHO answered after the
// CAN_DOs) and "job NAME PAYLOAD" before each job.
'use strict';

const fs = require('fs');
const Gearman = require('abraxas');

const { port, start } = require('./main');

function connect() {
  const c = Gearman.Client.connect({ host: '127.0.0.1', port, defaultEncoding: 'utf8' });
  c.on('connection-error', (e) => console.error('connection error', e.message));
  return c;
}

function worker() {
  const c = connect();
  c.setClientId('abraxas-worker');
  const fns = {
    reverse: (task) => task.payload.split('').reverse().join(''),
    progress: (task) => {
      task.status(0.5);
      task.warn('careful');
      task.status(1);
      return 'done:' + task.payload;
    },
    // task.error sends WORK_EXCEPTION (or WORK_WARNING) and then WORK_FAIL for the job.
    fail: (task) => {
      task.error('nope');
    },
    throw: () => {
      throw new Error('boom');
    },
    log: () => 'logged',
    hold: (task) =>
      new Promise((resolve) => {
        task.status(3 / 7);
        const deadline = Date.now() + 10000;
        const wait = () => {
          if (fs.existsSync(task.payload) || Date.now() > deadline) resolve('released');
          else setTimeout(wait, 20);
        };
        wait();
      }),
  };
  for (const [name, fn] of Object.entries(fns)) {
    c.registerWorker(name, (task) => {
      console.log('job', name, task.payload);
      return fn(task);
    });
  }
  c.echo('registered', (err) => {
    if (err) {
      console.error('echo', err);
      process.exit(1);
    }
    console.log('ready');
  });
}

// Run one foreground job: a line with its status events, its warnings and its outcome. abraxas
// reads a warning's text as a stream, so it may be emitted after a later status: warnings are
// listed apart.
function run(c, func, data, options) {
  return new Promise((resolve) => {
    const events = [];
    const warnings = [];
    const task = c.submitJob(func, options || {}, data);
    task.on('status', (p) => events.push('status:' + p));
    task.on('warn', (w) => warnings.push(w));
    const line = (end) => {
      if (warnings.length) events.push('warnings:' + warnings.join(','));
      return events.concat([end]).join(' ');
    };
    task.then(
      (r) => resolve(line('complete:' + r)),
      (e) => resolve(line('error:' + e.message)),
    );
  });
}

async function client(scenario, arg) {
  const c = connect();
  if (scenario === 'do') {
    console.log('echo', await c.echo('ping'));
    console.log('normal', await run(c, 'reverse', 'hello'));
    console.log('high', await run(c, 'reverse', 'high', { priority: 'high' }));
    console.log('low', await run(c, 'reverse', 'low', { priority: 'low', uniqueid: 'abx-low' }));
    console.log('progress', await run(c, 'progress', 'p'));
    console.log('fail', await run(c, 'fail', 'x'));
    console.log('throw', await run(c, 'throw', 'x'));
  } else if (scenario === 'background') {
    for (const [data, priority] of [['L1', 'low'], ['N1', null], ['H1', 'high']]) {
      const handle = await c.submitJobBg('log', { priority }, data);
      console.log('submitted', data, /^H:/.test(handle));
    }
  } else if (scenario === 'epoch') {
    // A job due in ARG seconds, through SUBMIT_JOB_EPOCH.
    const at = Math.floor(Date.now() / 1000) + Number(arg);
    const handle = await c.submitJobAt('log', at, {}, 'at');
    console.log('epoch submitted', /^H:/.test(handle));
  } else if (scenario === 'sched') {
    // SUBMIT_JOB_SCHED with the five fields given as ARG ("min,hour,day,month,dow").
    const [minute, hour, day, month, dow] = arg.split(',');
    const handle = await c.submitJobSched('log', { minute, hour, day, month, dow }, {}, 'sched');
    console.log('sched submitted', /^H:/.test(handle));
  } else if (scenario === 'admin') {
    // While the worker holds a job (released when the file ARG exists).
    const hold = c.submitJob('hold', {}, arg);
    const handle = await new Promise((resolve) => hold.once('created', () => resolve(hold.jobid)));
    // The admin calls take a callback; their promise side is a stream of objects.
    const call = (method, ...args) =>
      new Promise((resolve, reject) =>
        c[method](...args, (err, value) => (err ? reject(err) : resolve(value))),
      );
    let st;
    for (let i = 0; i < 200; i++) {
      st = await call('getStatus', handle);
      if (st.running && st.complete) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    console.log('get_status', st.known, st.running, st.complete.toFixed(2));
    const status = await call('status');
    console.log('status hold', JSON.stringify(status.hold));
    const workers = [].concat(await call('workers'));
    const w = workers.filter((x) => x.clientid === 'abraxas-worker');
    console.log('workers', w.length, w.length ? w[0].functions.slice().sort().join(',') : '');
    fs.writeFileSync(arg, '');
    console.log('hold', await hold);
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  c.disconnect();
}

start(worker, client);
