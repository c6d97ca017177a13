args=(data.train_batch_size=256 'trainer.project_name=a b' # comment
  "x=${HOME}/y")
args+=(trainer.nnodes=2)
args[5]=z=1
declare -a empty=()
python3 -m verl.trainer.main_ppo "${args[@]}" ${args[*]} "${args[1]}" ${#args[@]} "${empty[@]}" ${args[@]:1:2}
