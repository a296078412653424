import json


def run(event, context):
    return json.dumps({"data": event["data"], "metadata": event["metadata"], "context": context}, sort_keys=True)


def check(ret):
    return json.loads(ret)["data"] != "right"
