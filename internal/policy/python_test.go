package policy

import "testing"

func TestPythonRulesRefuse(t *testing.T) {
	p := testPolicy()
	cases := []struct {
		rule, code string
	}{
		// python.subprocess
		{RulePySubprocess, "import subprocess\nsubprocess.run(['ls'])"},
		{RulePySubprocess, "import subprocess as sp"},
		{RulePySubprocess, "from subprocess import run, PIPE"},
		{RulePySubprocess, "import os, subprocess"},
		{RulePySubprocess, "__import__('subprocess').run(['id'])"},
		{RulePySubprocess, "__import__('sub' + 'process')"},
		{RulePySubprocess, "__import__('sub' 'process')"},
		{RulePySubprocess, "__import__(\"\\x73ubprocess\")"},
		{RulePySubprocess, "import importlib\nimportlib.import_module('subprocess')"},
		{RulePySubprocess, "from importlib import import_module as im\nim('subprocess')"},
		{RulePySubprocess, "import sys\nsys.modules['subprocess']"},
		{RulePySubprocess, "import asyncio\nasyncio.create_subprocess_shell('id')"},
		{RulePySubprocess, "from asyncio import create_subprocess_exec"},
		{RulePySubprocess, "import asyncio.subprocess"},
		{RulePySubprocess, "if True: import subprocess"},
		{RulePySubprocess, "try:\n    import subprocess\nexcept ImportError:\n    pass"},
		{RulePySubprocess, "def f():\n    import subprocess\n    return subprocess"},
		{RulePySubprocess, "import _posixsubprocess"},
		{RulePySubprocess, "exec('import subprocess')"},
		{RulePySubprocess, "exec('imp' + 'ort subprocess')"},
		{RulePySubprocess, "x = f\"{__import__('subprocess')}\""},
		{RulePySubprocess, "import builtins\nbuiltins.__import__('subprocess')"},
		// python.os_exec
		{RulePyOSExec, "import os\nos.system('id')"},
		{RulePyOSExec, "import os\nos.popen('id').read()"},
		{RulePyOSExec, "import os\nos.execv('/bin/sh', ['sh'])"},
		{RulePyOSExec, "import os\nos.execvpe('sh', ['sh'], {})"},
		{RulePyOSExec, "import os\nos.spawnlp(os.P_WAIT, 'ls', 'ls')"},
		{RulePyOSExec, "import os\nos.posix_spawn('/bin/sh', ['sh'], {})"},
		{RulePyOSExec, "import os as o\no.system('id')"},
		{RulePyOSExec, "import os\nfoo = os\nfoo.system('id')"},
		{RulePyOSExec, "from os import system\nsystem('id')"},
		{RulePyOSExec, "from os import system as s"},
		{RulePyOSExec, "from os import *"},
		{RulePyOSExec, "import posix\nposix.system('id')"},
		{RulePyOSExec, "getattr(os, 'system')('id')"},
		{RulePyOSExec, "import os\ngetattr(os, 'sys'+'tem')('id')"},
		{RulePyOSExec, "import os\ngetattr(os, 'sys' 'tem')('id')"},
		{RulePyOSExec, "getattr(__import__('os'), 'system')('id')"},
		{RulePyOSExec, "__import__('os').system('id')"},
		{RulePyOSExec, "m = __import__('os')\nm.system('id')"},
		{RulePyOSExec, "import importlib\nm = importlib.import_module('os')\nm.popen('id')"},
		{RulePyOSExec, "import sys\nsys.modules['os'].system('id')"},
		{RulePyOSExec, "eval(\"__import__('os').system('id')\")"},
		{RulePyOSExec, "print(f'{os.system(\"id\")}')"},
		{RulePyOSExec, "x = 1; import os; os.system('id')"},
		{RulePyOSExec, "os . system ('id')"},
		{RulePyOSExec, "os.\\\nsystem('id')"},
		// python.pty
		{RulePyPty, "import pty\npty.spawn('/bin/sh')"},
		{RulePyPty, "from pty import spawn"},
		{RulePyPty, "__import__('pty').spawn('sh')"},
		// python.ctypes
		{RulePyCtypes, "import ctypes\nctypes.CDLL(None).system(b'id')"},
		{RulePyCtypes, "from ctypes import CDLL"},
		{RulePyCtypes, "import ctypes.util"},
		{RulePyCtypes, "import cffi"},
		// python.dynamic_import
		{RulePyDynamicImport, "name = 'subprocess'\n__import__(name)"},
		{RulePyDynamicImport, "__import__(''.join(['sub', 'process']))"},
		{RulePyDynamicImport, "import importlib\nimportlib.import_module(n)"},
		{RulePyDynamicImport, "import builtins\ngetattr(builtins, '__import__')('os')"},
		// python.dynamic_attr
		{RulePyDynamicAttr, "import os\ngetattr(os, name)('id')"},
		{RulePyDynamicAttr, "import os\ngetattr(os, ''.join(['sys', 'tem']))"},
		{RulePyDynamicAttr, "import os\nvars(os)['system']('id')"},
		{RulePyDynamicAttr, "import os\nos.__dict__['system']('id')"},
		// python.introspection
		{RulePyIntrospection, "().__class__.__bases__[0].__subclasses__()"},
		{RulePyIntrospection, "f.__globals__['os']"},
		{RulePyIntrospection, "__builtins__.__import__('os')"},
		// python.dynamic_exec
		{RulePyDynamicExec, "exec(open('x.py').read())"},
		{RulePyDynamicExec, "code = 'import os'\nexec(code)"},
		{RulePyDynamicExec, "eval(user_input)"},
		{RulePyDynamicExec, "import base64\nexec(base64.b64decode('aW1wb3J0IG9z'))"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			vs := p.Python(c.code)
			if !hasRule(vs, c.rule) {
				t.Errorf("checkPython(%q) = %v, want rule %s", c.code, rulesOf(vs), c.rule)
			}
		})
	}
}

func TestPythonRulesAllow(t *testing.T) {
	p := testPolicy()
	allowed := []string{
		"print(1 + 1)",
		"import pandas as pd\ndf = pd.read_csv('/workspace/data.csv')\ndf.describe()",
		"import os\nprint(os.listdir('/workspace'))",
		"import os\nos.path.join('a', 'b')",
		"import os\nos.makedirs('/work/outputs', exist_ok=True)",
		"import platform\nplatform.system()",
		"import re\nre.compile('x')",
		"df.eval('a + b')",
		"s = 'import subprocess'  # just a string",
		"# import subprocess\nprint('hi')",
		"print(\"os.system('x')\")",
		"x = {'system': 1}\nx['system']",
		"import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
		"from os import path, listdir",
		"from os.path import join",
		"import numpy as np\nnp.exp(2)",
		"getattr(obj, name)",
		"getattr(os, 'getcwd')()",
		"exec('x = 1')",
		"eval('1 + 2')",
		"f'{x!r:>10}'",
		"import sqlite3\nsqlite3.connect('/workspace/db.sqlite')",
		"raise ValueError('bad') from None",
		"def g():\n    yield from range(3)",
	}
	for _, code := range allowed {
		t.Run(code, func(t *testing.T) {
			if vs := p.Python(code); len(vs) > 0 {
				t.Errorf("checkPython(%q) = %v, want no violation", code, rulesOf(vs))
			}
		})
	}
}

func TestPythonPolicySwitch(t *testing.T) {
	off := New(Config{WorkDir: "/work", InputDir: "/workspace", DisablePython: true})
	if vs := off.Python("import subprocess"); len(vs) != 0 {
		t.Errorf("DisablePython: got %v", rulesOf(vs))
	}
	if vs := off.Shell(`python3 -c "import subprocess"`); hasRule(vs, RulePySubprocess) {
		t.Errorf("DisablePython inside shell: got %v", rulesOf(vs))
	}
	if vs := testPolicy().Python("import subprocess"); !hasRule(vs, RulePySubprocess) {
		t.Errorf("default: got %v", rulesOf(vs))
	}
}
