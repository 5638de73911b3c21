"""The `rollout_server` fixture's `script(..., agents=...)`: each subagent's own steps."""

from openai import OpenAI


def test_the_fixture_scripts_each_agent_of_a_multi_agent_response(rollout_server):
    rollout_server.script(
        [{"spawn": [{"agent": "helper", "task": "Check."}]}, {"wait": ["helper"]}, {"text": "ok"}],
        agents={"helper": [{"text": "checked"}]},
    )
    client = OpenAI(api_key="test", base_url=rollout_server.http_base_url, max_retries=0)
    resp = client.beta.responses.create(
        model="m", input="go", multi_agent={"enabled": True}, betas=["responses_multi_agent=v1"]
    )
    said = [(o.agent.agent_name, o.content[0].text) for o in resp.output if o.type == "message"]
    assert said == [("helper", "checked"), ("root", "ok")]
