// SPDX-License-Identifier: GPL-2.0
// A pprof profile of Python code written by Google's own encoder
// (github.com/google/pprof/profile), as profilers that export py-spy's
// samples to pprof name them: a Function per Python function, its name
// alone ("Module._call_impl") and its file a full path, lines in Line;
// native frames without a file.  python_frames.sh reads it.
package main

import (
	"os"

	"github.com/google/pprof/profile"
)

func main() {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10000000,
	}
	functions := map[string]*profile.Function{}
	function := func(name, file string) *profile.Function {
		if f, ok := functions[name+file]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name,
			SystemName: name, Filename: file}
		p.Function = append(p.Function, f)
		functions[name+file] = f
		return f
	}
	location := func(name, file string, line int64) *profile.Location {
		l := &profile.Location{ID: uint64(len(p.Location) + 1),
			Line: []profile.Line{{Function: function(name, file), Line: line}}}
		p.Location = append(p.Location, l)
		return l
	}
	type frame struct {
		name, file string
		line       int64
	}
	sample := func(count int64, frames ...frame) {
		s := &profile.Sample{Value: []int64{count}}
		// pprof lists a sample's locations leaf first.
		for i := len(frames) - 1; i >= 0; i-- {
			f := frames[i]
			s.Location = append(s.Location, location(f.name, f.file, f.line))
		}
		p.Sample = append(p.Sample, s)
	}
	train := "/home/user/job/train.py"
	module := "/usr/lib/python3/dist-packages/torch/nn/modules/module.py"
	threading := "/usr/lib/python3.11/threading.py"
	sample(7, frame{"<module>", train, 40}, frame{"train", train, 20},
		frame{"Module._call_impl", module, 1501},
		frame{"Model.forward", "/home/user/job/model.py", 12})
	sample(3, frame{"<module>", train, 40}, frame{"train", train, 21},
		frame{"load_batch", "/home/user/job/data.py", 21})
	sample(2, frame{"Thread._bootstrap", threading, 995}, frame{"Thread.run", threading, 953},
		frame{"prefetch", "/home/user/job/data.py", 50}, frame{"read", "", 0})
	sample(1, frame{"<module>", train, 40},
		frame{"_find_and_load", "<frozen importlib._bootstrap>", 1165})
	if err := p.CheckValid(); err != nil {
		panic(err)
	}
	if err := p.Write(os.Stdout); err != nil {
		panic(err)
	}
}
