// The command line every program in this folder takes: `node LIBRARY.js PORT worker|client
// SCENARIO [ARG]`. `start` starts the worker, or runs the client's scenario (a failure prints
// the error and exits 1), or says how to call the program (exit 2).
'use strict';

const path = require('path');

exports.port = Number(process.argv[2]);

exports.start = function start(worker, client) {
  const role = process.argv[3];
  if (role === 'worker') {
    worker();
  } else if (role === 'client') {
    client(process.argv[4], process.argv[5]).catch((e) => {
      console.error(e);
      process.exit(1);
    });
  } else {
    console.error(`usage: node ${path.basename(process.argv[1])} PORT worker|client SCENARIO [ARG]`);
    process.exit(2);
  }
};
