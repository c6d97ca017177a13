cat <<'EOF2' > /tmp/x.yaml
a: $(not run)
EOF2
cat <<-EOF3
	tabbed $HOME
	EOF3
x=$'a\tb' y=$"z" z=`basename /a/b.sh .sh` w=~/p
exec 3>&1 2>&1 &>/dev/null
NCCL_DEBUG=WARN python3 -m verl.trainer.main_ppo a=$x b=$y c=$z d=$w e=${!x} f=${x@Q} g=$RANDOM h=$$ <(ls) 2>&1 | tee log &
