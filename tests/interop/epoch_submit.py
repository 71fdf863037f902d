"""Submit one SUBMIT_JOB_EPOCH job through libgearman, the C client library.

No command-line client can send SUBMIT_JOB_EPOCH (`gearman` has no option for it; pecl/gearman,
Perl Gearman::Client and python gear have no API for it), but libgearman can:
gearman_execute() with a task attribute from gearman_task_attr_init_epoch() sends it, as
gearmand's own tests do. libgearman.so.8 comes with gearman-tools and php-gearman, so this script
calls it through ctypes (no compiler or headers needed).

Usage: python3 epoch_submit.py PORT FUNCTION EPOCH WORKLOAD
Prints "handle <job handle>".
"""
import ctypes
import ctypes.util
import sys

port, function, epoch, workload = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4].encode()

lib = ctypes.CDLL(ctypes.util.find_library('gearman') or 'libgearman.so.8')

GEARMAN_SUCCESS = 0
GEARMAN_JOB_PRIORITY_NORMAL = 1


class TaskAttrEpoch(ctypes.Structure):
    _fields_ = [('value', ctypes.c_int64)]  # time_t


class TaskAttr(ctypes.Structure):
    # struct gearman_task_attr_t { kind; priority; union { char bytes[8]; epoch_t epoch; } }
    _fields_ = [('kind', ctypes.c_int), ('priority', ctypes.c_int), ('epoch', TaskAttrEpoch)]


class String(ctypes.Structure):
    _fields_ = [('c_str', ctypes.c_char_p), ('size', ctypes.c_size_t)]


class Argument(ctypes.Structure):
    _fields_ = [('name', String), ('value', String)]


lib.gearman_client_create.restype = ctypes.c_void_p
lib.gearman_client_create.argtypes = [ctypes.c_void_p]
lib.gearman_client_add_server.restype = ctypes.c_int
lib.gearman_client_add_server.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint16]
lib.gearman_client_set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.gearman_client_error.restype = ctypes.c_char_p
lib.gearman_client_error.argtypes = [ctypes.c_void_p]
lib.gearman_task_attr_init_epoch.restype = TaskAttr
lib.gearman_task_attr_init_epoch.argtypes = [ctypes.c_int64, ctypes.c_int]
lib.gearman_argument_make.restype = Argument
lib.gearman_argument_make.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
lib.gearman_execute.restype = ctypes.c_void_p
lib.gearman_execute.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                ctypes.c_size_t, ctypes.POINTER(TaskAttr), ctypes.POINTER(Argument),
                                ctypes.c_void_p]
lib.gearman_task_job_handle.restype = ctypes.c_char_p
lib.gearman_task_job_handle.argtypes = [ctypes.c_void_p]
lib.gearman_task_free.argtypes = [ctypes.c_void_p]
lib.gearman_client_free.argtypes = [ctypes.c_void_p]

client = lib.gearman_client_create(None)
if not client:
    sys.exit('gearman_client_create failed')
if lib.gearman_client_add_server(client, b'127.0.0.1', int(port)) != GEARMAN_SUCCESS:
    sys.exit('gearman_client_add_server: %s' % lib.gearman_client_error(client))
lib.gearman_client_set_timeout(client, 5000)

attr = lib.gearman_task_attr_init_epoch(epoch, GEARMAN_JOB_PRIORITY_NORMAL)
value = lib.gearman_argument_make(None, 0, workload, len(workload))
task = lib.gearman_execute(client, function, len(function), None, 0, ctypes.byref(attr),
                           ctypes.byref(value), None)
if not task:
    sys.exit('gearman_execute failed: %s' % lib.gearman_client_error(client))
handle = lib.gearman_task_job_handle(task)
if not handle:
    sys.exit('no job handle: %s' % lib.gearman_client_error(client))
print('handle', handle.decode(), flush=True)
lib.gearman_task_free(task)
lib.gearman_client_free(client)
