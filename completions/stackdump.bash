# bash completion for stackdump(1).
# Generated from the command table by `stackdump --completion bash`: do not
# edit. Install as $(pkg-config --variable=completionsdir bash-completion)/stackdump
# or source it from ~/.bashrc.

_stackdump_pids()
{
	local cur=$1 p IFS=$'\n'
	if [[ $cur == [0-9]* ]]; then
		local pids=()
		for p in /proc/[0-9]*; do pids+=("${p#/proc/}"); done
		COMPREPLY+=($(compgen -W "${pids[*]}" -- "$cur"))
	else
		COMPREPLY+=($(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur"))
	fi
}

_stackdump_commands()
{
	if [[ $1 == all ]]; then
		COMPREPLY+=($(compgen -W "attach core detach diff dump help load locks profile ps quit record report save set show source targets threads top use" -- "$cur"))
	else
		COMPREPLY+=($(compgen -W "core diff dump help load locks profile ps record report save threads top shell" -- "$cur"))
	fi
}

_stackdump()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev= i cmd=
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}
	# "--format=json" comes as three words: --format = json
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	fi
	COMPREPLY=()
	# The command is the first word that is neither an option nor an
	# option's value.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-c|--completion|-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout|-f|--format)
			[[ ${COMP_WORDS[i+1]} == = ]] && ((i++))
			((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done

	case $cmd in
	'')
		case $prev in
		-c)
			return ;;
		--completion)
			COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
			return ;;
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-h --help -V --version -c --completion --tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --format --verbose --group --no-group --threads --full-names --all-frames" -- "$cur"))
		else
			_stackdump_commands
			_stackdump_pids "$cur"
		fi
		;;
	shell)
		_stackdump_pids "$cur"
		;;
	core)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		--sysroot)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -d -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --format --group --sysroot --threads --help" -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	diff)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text svg folded json" -- "$cur"))
			return ;;
		-o|--output)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			return ;;
		-l|--limit|--title)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--format --output --limit --title --help" -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	help)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help" -- "$cur"))
		else
			_stackdump_commands all
		fi
		;;
	load)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help" -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	locks)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout|-c|--count|-i|--interval)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --format --count --interval --full-names --all-frames --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	profile)
		case $prev in
		--pid-of)
			_stackdump_pids "$cur"
			return ;;
		-e|--engine)
			COMPREPLY=($(compgen -W "auto perf ptrace" -- "$cur"))
			return ;;
		-f|--format)
			COMPREPLY=($(compgen -W "top tree folded svg pprof json" -- "$cur"))
			return ;;
		-o|--output)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout|-r|--rate|-i|--interval|-d|--duration|-c|--count|--perf-buffer|--cpu-budget|-l|--limit|--min-percent|--title)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --rate --interval --duration --count --pid-of --engine --perf-buffer --cpu-budget --on-cpu --off-cpu --no-idle --idle --group-threads --by-address --locks --format --output --limit --min-percent --title --quiet --verbose --goroutines --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	ps)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--all --format --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	record)
		case $prev in
		-p|--pid-of)
			_stackdump_pids "$cur"
			return ;;
		-o|--out)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -d -- "$cur"))
			return ;;
		--engine)
			COMPREPLY=($(compgen -W "auto perf ptrace" -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout|-e|--every|--for|-c|--count|--max-disk|-w|--when|-b|--burst|--cpu-budget)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --pid-of --every --for --count --out --max-disk --compress --follow --when --burst --quiet --verbose --engine --cmdline --cpu-budget --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	report)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json folded svg pprof" -- "$cur"))
			return ;;
		--view)
			COMPREPLY=($(compgen -W "top tree locks" -- "$cur"))
			return ;;
		-o|--output)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			return ;;
		--timeline-svg)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			return ;;
		--only|-l|--limit|--min-percent|--title)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--format --view --output --timeline-svg --only --limit --min-percent --on-cpu --off-cpu --no-idle --group-threads --by-address --title --help" -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	save)
		case $prev in
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --compress --cmdline --core --all-registers --help" -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	threads)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--format --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	top)
		case $prev in
		-e|--engine)
			COMPREPLY=($(compgen -W "auto perf ptrace" -- "$cur"))
			return ;;
		-s|--sort)
			COMPREPLY=($(compgen -W "cpu name tid" -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout|-r|--rate|--cpu-budget|--refresh|-d|--duration|-c|--count|-l|--limit)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --rate --engine --cpu-budget --refresh --duration --count --idle --sort --limit --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	*)
		case $prev in
		-f|--format)
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
			return ;;
		-t|--tid|-n|--name|--max-frames|--stack-bytes|--stack-total|--timeout)
			return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--tid --name --per-thread --max-frames --no-inline --no-source --stack-bytes --stack-total --timeout --format --verbose --group --no-group --threads --full-names --all-frames --help" -- "$cur"))
		else
			_stackdump_pids "$cur"
		fi
		;;
	esac
}

complete -F _stackdump stackdump
