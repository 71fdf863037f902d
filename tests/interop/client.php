<?php
// A pecl/gearman client for the interop tests (tests/interop_php.rs).
// Usage: php client.php PORT SCENARIO [ARG]
// Each scenario prints one result per line; the Rust test compares the lines.
declare(strict_types=1);

$port = (int)$argv[1];
$scenario = $argv[2];
$arg = $argv[3] ?? '';

$client = new GearmanClient();
// addServer also sends OPTION_REQ "exceptions" and throws if the server refuses it.
$client->addServer('127.0.0.1', $port);
$client->setTimeout(8000);

function rc_name(int $rc): string
{
    $names = [
        GEARMAN_SUCCESS => 'SUCCESS',
        GEARMAN_WORK_EXCEPTION => 'WORK_EXCEPTION',
        GEARMAN_WORK_FAIL => 'WORK_FAIL',
        GEARMAN_WORK_DATA => 'WORK_DATA',
        GEARMAN_WORK_STATUS => 'WORK_STATUS',
        GEARMAN_WORK_WARNING => 'WORK_WARNING',
        GEARMAN_TIMEOUT => 'TIMEOUT',
    ];
    return $names[$rc] ?? "rc$rc";
}

/** Poll $f until it returns a non-null value, at most 5 s. */
function poll(callable $f)
{
    $deadline = microtime(true) + 5;
    do {
        $v = $f();
        if ($v !== null) {
            return $v;
        }
        usleep(20000);
    } while (microtime(true) < $deadline);
    return null;
}

function status_str($st): string
{
    return implode(' ', array_map(fn ($v) => is_bool($v) ? (int)$v : $v, $st));
}

switch ($scenario) {
    case 'ping':
        echo 'ping ', var_export($client->ping('hello'), true), "\n";
        break;

    case 'do':
        foreach (['doNormal', 'doHigh', 'doLow'] as $m) {
            $r = $client->$m('reverse', "via $m");
            echo "$m ", $r, ' ', rc_name($client->returnCode()), "\n";
        }
        $r = @$client->doNormal('throw', 'x');
        echo 'throw ', var_export($r, true), ' ', rc_name($client->returnCode()), "\n";
        $r = @$client->doNormal('fail', 'x');
        echo 'fail ', var_export($r, true), ' ', rc_name($client->returnCode()), "\n";
        // doNormal returns each WORK_DATA/WORK_STATUS/WORK_WARNING in turn; call again until done.
        $seen = [];
        for ($i = 0; $i < 10; $i++) {
            $r = $client->doNormal('progress', 'p');
            $rc = $client->returnCode();
            $seen[] = rc_name($rc) . '=' . $r;
            if ($rc == GEARMAN_SUCCESS) {
                break;
            }
        }
        echo 'progress ', implode(' ', $seen), "\n";
        break;

    case 'tasks':
        // libgearman copies the callbacks into a task when it is added: set them first.
        $events = [];
        $cb = function (string $kind) use (&$events) {
            return function (GearmanTask $t) use ($kind, &$events) {
                $what = $kind === 'status'
                    ? $t->taskNumerator() . '/' . $t->taskDenominator()
                    : (string)$t->data();
                $events[$t->unique()][] = "$kind:$what";
            };
        };
        $client->setCompleteCallback($cb('complete'));
        $client->setStatusCallback($cb('status'));
        $client->setDataCallback($cb('data'));
        $client->setWarningCallback($cb('warning'));
        $client->setExceptionCallback($cb('exception'));
        $client->setFailCallback($cb('fail'));
        $client->addTaskHigh('reverse', 'abc', null, 't1');
        $client->addTask('progress', 'p', null, 't2');
        $client->addTaskLow('throw', 'e', null, 't3');
        $client->addTask('fail', 'f', null, 't4');
        $ok = $client->runTasks();
        echo 'runTasks ', var_export($ok, true), ' ', rc_name($client->returnCode()), "\n";
        ksort($events);
        foreach ($events as $unique => $list) {
            echo "$unique ", implode(' ', $list), "\n";
        }
        break;

    case 'background':
        // With no worker connected: queue jobs at each priority; a worker started later runs them.
        $handles = [];
        foreach ([['doLowBackground', 'L1'], ['doBackground', 'N1'], ['doHighBackground', 'H1'],
                  ['doLowBackground', 'L2'], ['doBackground', 'N2'], ['doHighBackground', 'H2']] as [$m, $data]) {
            $h = $client->$m('log', $data);
            $handles[] = $h;
            echo "$m $data ", rc_name($client->returnCode()), ' ', preg_match('/^H:.+:\d+$/', $h) ? 'handle' : "bad-handle:$h", "\n";
        }
        echo 'distinct ', count(array_unique($handles)), "\n";
        break;

    case 'status':
        // ARG is a file name: the worker holds the job until it exists.
        $h = $client->doBackground('hold', $arg, 'php-unique-1');
        echo 'submitted ', rc_name($client->returnCode()), "\n";
        $st = poll(function () use ($client, $h) {
            $s = $client->jobStatus($h);
            return ($s[1] && $s[2] == 3) ? $s : null;
        });
        echo 'jobStatus ', $st === null ? 'timeout ' . status_str($client->jobStatus($h)) : status_str($st), "\n";
        echo 'jobStatusByUniqueKey ', status_str($client->jobStatusByUniqueKey('php-unique-1')), "\n";
        echo 'unknown ', status_str($client->jobStatus('H:nohost:999999')), "\n";
        touch($arg);
        $st = poll(function () use ($client, $h) {
            $s = $client->jobStatus($h);
            return $s[0] ? null : $s;
        });
        echo 'finished ', $st === null ? 'timeout' : status_str($st), "\n";
        break;

    default:
        fwrite(STDERR, "unknown scenario $scenario\n");
        exit(2);
}
