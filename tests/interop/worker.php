<?php
// A pecl/gearman worker for the interop tests (tests/interop_php.rs).
// Usage: php worker.php PORT
// Prints "ready" once its functions are registered, and "job FUNC WORKLOAD" before each job.
declare(strict_types=1);

$port = (int)$argv[1];
$worker = new GearmanWorker();
$worker->addServer('127.0.0.1', $port);
$worker->setId('php-worker');

function note(GearmanJob $job): void
{
    echo 'job ', $job->functionName(), ' ', $job->workload(), "\n";
}

$worker->addFunction('reverse', function (GearmanJob $job) {
    note($job);
    return strrev($job->workload());
});

$worker->addFunction('progress', function (GearmanJob $job) {
    note($job);
    $job->sendStatus(1, 2);
    $job->sendData('chunk');
    $job->sendWarning('careful');
    $job->sendStatus(2, 2);
    return 'done:' . $job->workload();
});

$worker->addFunction('throw', function (GearmanJob $job) {
    note($job);
    // WORK_EXCEPTION ends the job: libgearman sends nothing more for it.
    $job->sendException('boom');
    return null;
});

$worker->addFunction('fail', function (GearmanJob $job) {
    note($job);
    $job->sendFail();
    return null;
});

$worker->addFunction('log', function (GearmanJob $job) {
    note($job);
    return 'logged';
});

// Reports 3/7, then holds the job until the file named by the workload exists (at most 10 s).
$worker->addFunction('hold', function (GearmanJob $job) {
    note($job);
    $job->sendStatus(3, 7);
    $deadline = microtime(true) + 10;
    while (!file_exists($job->workload()) && microtime(true) < $deadline) {
        usleep(20000);
    }
    return 'released';
});

echo "ready\n";
while (true) {
    $worker->work();
    $rc = $worker->returnCode();
    if ($rc != GEARMAN_SUCCESS && $rc != GEARMAN_WORK_EXCEPTION && $rc != GEARMAN_WORK_FAIL) {
        echo 'stopped ', $rc, ' ', $worker->error(), "\n";
        exit(1);
    }
}
