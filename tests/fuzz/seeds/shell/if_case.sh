set -xeuo pipefail
ENGINE=${ENGINE:-megatron}
if [ "$ENGINE" = megatron ] && ! [ -z "$ENGINE" ]; then TP=2; elif [[ $ENGINE == fsdp* ]]; then TP=1; else exit 1; fi
case "$ENGINE" in (mega*|x) PP=2 ;& fsdp) PP=$PP-x ;;& *) ;; esac
if [ -f /x ]; then export NCCL_DEBUG=INFO; EXTRA="a=1 b=2"; fi
[ -n "$SLURM_JOB_ID" ] && NODES=$SLURM_NNODES || NODES=1
while read -r line; do N=$line; done < list.txt
for s in 1 2; do python3 -m verl.trainer.main_ppo seed=$s tp=$TP pp=$PP $EXTRA nodes=$NODES; done
(( TP > 1 )) && echo big
