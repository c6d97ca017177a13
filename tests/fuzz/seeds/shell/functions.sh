log() { echo "[$(date +%T)] $*" >&2; }
launch() {
  local model=$1 nodes=$2
  shift 2 || return 1
  log "run ${model##*/} ${model%/*} ${model/Qwen/q} ${model^^}"
  python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path="$model" trainer.nnodes=$nodes "$@"
  return 0
}
function again { launch "$@"; }
again Qwen/Qwen3-8B 1 data.train_batch_size=512 "trainer.experiment_name=x y"
f() { f; }; f
