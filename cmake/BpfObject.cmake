# SPDX-License-Identifier: GPL-2.0
# bpf_object(NAME SOURCE): compiles SOURCE with clang -target bpf against the
# pinned vmlinux.h, generates NAME.skel.h with bpftool, and defines the
# INTERFACE target NAME_skel that carries the include path and libbpf.
function(bpf_object name source)
	set(werror)
	if(LLMPROF_WERROR)
		set(werror -Werror)
	endif()
	set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
	set(skel ${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h)
	add_custom_command(OUTPUT ${obj}
		COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall ${werror}
			-I${CMAKE_SOURCE_DIR}/bpf -idirafter /usr/include/x86_64-linux-gnu -c ${source} -o ${obj}
		DEPENDS ${source} ${ARGN}
		IMPLICIT_DEPENDS C ${source}
		COMMENT "BPF ${name}")
	add_custom_command(OUTPUT ${skel}
		COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
		DEPENDS ${obj}
		COMMENT "skeleton ${name}")
	add_custom_target(${name}_skel_gen DEPENDS ${skel})
	add_library(${name}_skel INTERFACE)
	add_dependencies(${name}_skel ${name}_skel_gen)
	target_include_directories(${name}_skel INTERFACE ${CMAKE_CURRENT_BINARY_DIR})
endfunction()
